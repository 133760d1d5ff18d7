// The C stage's shared declarations (cstage_linux.c: why there is one).

#ifndef MCPX_CSTAGE_H
#define MCPX_CSTAGE_H

#include <stddef.h>
#include <stdint.h>

// MaxRequest of wire.go (TestCStageConstants).
#define MCPX_MAX_REQUEST (1 << 20)

// str is one decoded string: p is NUL-terminated, n its length, nul set if
// it holds a NUL byte (which C would read as its end).
struct str {
	const char *p;
	size_t n;
	int nul;
};

struct strs {
	struct str *v;
	size_t n;
};

struct path_rule {
	struct str path;
	uint64_t dir, file;
};

struct port_rule {
	uint64_t access, port;
};

struct rlim {
	struct str feature;
	uint64_t resource, cur, max;
};

struct join {
	struct str file;
	struct strs features;
};

// request is wire.go's Request.
struct request {
	struct str path;
	struct strs args, env;
	int loopback;
	struct strs network;
	uint16_t proxy_port;
	struct str seccomp;
	struct strs seccomp_features;
	int landlock;
	uint64_t ll_fs, ll_net, ll_scoped;
	struct path_rule *paths;
	size_t npaths;
	struct port_rule *ports;
	size_t nports;
	struct strs ll_features;
	struct rlim *rlimits;
	size_t nrlimits;
	struct str capabilities;
	struct strs fatal;
	struct join *joins;
	size_t njoins;
};

// buf is a growing byte buffer for a reply; oom marks a failed growth
// (then it is not sent).
struct buf {
	char *b;
	size_t n, cap;
	int oom;
};

// report is a ReplyReport being made: its failures' encoding, their
// count, and whether one of them is of a fatal feature.
struct report {
	struct buf body;
	uint64_t failures;
	int refused;
	const struct strs *fatal;
};

void mcpx_buf_add(struct buf *w, const void *p, size_t n);
void mcpx_buf_str(struct buf *w, const char *s);
void mcpx_buf_uint(struct buf *w, uint64_t v);
void mcpx_buf_dec(struct buf *w, uint64_t v);
void mcpx_buf_errno(struct buf *w, int e);
int mcpx_contains(const struct strs *l, const struct str *s);
void mcpx_fail(int fd, struct buf *why) __attribute__((noreturn));
void mcpx_fail_str(int fd, const char *why) __attribute__((noreturn));

const char *mcpx_decode(const unsigned char *b, size_t n, struct request *r);
const char *mcpx_errno_text(int e);
int mcpx_write_file(const char *path, const char *s);
void mcpx_join(const struct request *r, struct report *rep);
int mcpx_confine(int fd, const struct request *r, struct report *rep, struct buf *why);

#endif
