// Package calllog keeps the daemon's call log: one JSON line per tool call
// in files under a directory (the broker uses <state>/records), and reads
// them back as per-server, per-tool or per-caller figures for `mcpx stats`.
//
//	l := calllog.Open(calllog.Options{Dir: dir, Logger: log})
//	defer l.Close()
//	l.Add(calllog.Record{Time: start, Server: "demo", Tool: "echo", Outcome: calllog.OK, ...})
//	sum, err := calllog.Summarize(dir, calllog.Query{Since: time.Now().Add(-time.Hour), By: calllog.ByServer})
//
// # The writer never slows a call
//
// [Log.Add] hands the record to a bounded channel and returns; one goroutine
// encodes and writes, woken once per batch (records gather for
// [DefaultBatch], less when the channel is half full), so a busy daemon
// pays one wake-up and one write per batch, not per call, and an idle one
// nothing. A full channel drops the record and counts it
// ([Counters.Dropped]). A directory that cannot be created or written, or
// a full disk, costs one warning in the log (and one more when writing works
// again) and a count per lost record ([Counters.Failed]); the writer tries
// the disk again at most once every [RetryInterval]. Calls never see either.
//
// # Files
//
// Records go to calls-<UTC start time>.jsonl (mode 0600, in a 0700
// directory), appended in the order the calls ended. A file is closed and a
// new one begun when it reaches MaxBytes or has been open for a day (or
// MaxAge, if shorter). Closed files are removed once their newest record is
// older than MaxAge, and the oldest go first when there are more than
// MaxFiles, so the directory holds at most about MaxFiles × MaxBytes. A new
// Log appends to the newest file if it is still young and small enough, so a
// daemon restarted often does not use up the files.
//
// A record never holds a call's arguments or result unless the config turns
// records.bodies on; then each is kept whole up to [BodyLimit] bytes and
// replaced by a note beyond.
package calllog
