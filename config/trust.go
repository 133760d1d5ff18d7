package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadTrusted reads the config file at path if it may be used for what it
// would run as the user uid: its servers' commands (the broker's project
// files) and its script lines, interpreters and environment (`mcpx run`).
// It returns the content and what its open descriptor stat'ed; an
// untrusted file returns its FileInfo and an *UntrustedError saying why,
// unread; so does anything but a regular file; a file it cannot open
// returns the open's error. It follows symlinks: what counts is the file
// read. The check and the read are of one open file: a file replaced
// between a stat and a read by whoever may write its directory is not read
// on the strength of its predecessor's owner and mode.
//
//	data, _, err := config.ReadTrusted(path, os.Getuid())
//	if err != nil {
//		log.Printf("%s is not used: %v", path, err)
//	}
//
// One rule, for the broker and the CLI alike, so one file on one chain is
// never trusted for its script lines and skipped for its servers: a file
// is trusted when this user or root owns it and neither its group nor
// others may write it.
//
//   - Root: a file root owns that this user cannot write is as trustworthy
//     as one of the user's own. Root can change any of the user's files
//     anyway, so trusting it widens nothing; and system config
//     directories (/etc/mcpx, a package's files, a checkout root made)
//     are root's, whose files the user must be able to use.
//   - Another user's file is never trusted, whoever they are: what it
//     names would run with this user's rights, a way up for them.
//   - A group- or world-writable file is never trusted, whoever owns it:
//     anyone who may write it may choose what runs as this user. The
//     group bits are checked too because a file's group seldom holds this
//     user alone.
func ReadTrusted(path string, uid int) ([]byte, fs.FileInfo, error) {
	// O_NONBLOCK: a FIFO opens at once instead of waiting for a writer,
	// and is then refused as no regular file; a regular file ignores it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &UntrustedError{Why: fmt.Sprintf("it is not a regular file (%s)", fi.Mode().Type())}
	}
	if err := TrustedInfo(fi, uid); err != nil {
		return nil, fi, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fi, err
	}
	if len(data) > maxConfigBytes {
		return nil, fi, fmt.Errorf("config file %s is over %d MiB", path, maxConfigBytes>>20)
	}
	return data, fi, nil
}

// maxConfigBytes bounds a config file ReadTrusted reads.
const maxConfigBytes = 16 << 20

// TrustedInfo is ReadTrusted's rule for a file already stat'ed (fi), as
// the user uid:
// for a caller that needs the stat for more (the broker's cache stamps
// files by it).
func TrustedInfo(fi fs.FileInfo, uid int) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != uid {
		return &UntrustedError{Why: fmt.Sprintf("another user (uid %d) owns it", st.Uid)}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &UntrustedError{Why: fmt.Sprintf("other users may write it (mode %o); make it writable by its owner only", perm)}
	}
	return nil
}

// UntrustedError is a config file Trusted refuses: Why says what makes
// it untrusted and how to fix it.
type UntrustedError struct{ Why string }

func (e *UntrustedError) Error() string { return e.Why }
