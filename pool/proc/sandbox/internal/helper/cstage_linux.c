//go:build linux && cgo

// The helper's C stage: the helper of helper_linux.go, run from an ELF
// constructor when the binary is loaded, before the Go runtime starts
// (runc's nsexec does the same). A Go helper pays the runtime's start in
// a large binary, some 15-20 ms of CPU per confined spawn; this pays the
// dynamic loader's and one getenv. It reads the same Request, sends the
// same replies and takes the same steps in the same order, with the same
// texts, so the daemon cannot tell the stages apart except by its speed
// (TestStages tells them apart by the helper's threads). Unlike the Go
// helper, which is never single-threaded, it can also make the namespaces
// itself (unshare(2) of a user namespace refuses a process with threads),
// which saves the daemon starting it through unshare(1).
//
// Everything here runs in a process that is about to exec or exit: what
// it allocates it never frees, and every allocation is bounded by the
// request, which is bounded by MCPX_MAX_REQUEST.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cstage_linux.h"

// Env, EnvUnshare and EnvGoStage of wire.go.
#define ENV_HELPER "MCPX_SANDBOX_HELPER"
#define ENV_UNSHARE "MCPX_SANDBOX_UNSHARE"
#define ENV_GO_STAGE "MCPX_SANDBOX_GO_STAGE"

void mcpx_buf_add(struct buf *w, const void *p, size_t n) {
	if (w->oom || n == 0)
		return;
	if (w->n + n > w->cap) {
		size_t cap = 2 * (w->n + n) + 64;
		char *b = realloc(w->b, cap);
		if (b == NULL) {
			w->oom = 1;
			return;
		}
		w->b = b;
		w->cap = cap;
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

void mcpx_buf_str(struct buf *w, const char *s) { mcpx_buf_add(w, s, strlen(s)); }

// buf_uint writes v as wire.go's encoder does: a uvarint.
void mcpx_buf_uint(struct buf *w, uint64_t v) {
	unsigned char b[10];
	size_t n = 0;
	for (; v >= 0x80; v >>= 7)
		b[n++] = (unsigned char)(v | 0x80);
	b[n++] = (unsigned char)v;
	mcpx_buf_add(w, b, n);
}

void mcpx_buf_dec(struct buf *w, uint64_t v) {
	char b[21];
	size_t i = sizeof b;
	do
		b[--i] = (char)('0' + v % 10);
	while (v /= 10);
	mcpx_buf_add(w, b + i, sizeof b - i);
}

// buf_errno appends errno e's text as Go's syscall.Errno.Error has it:
// glibc's text with its first letter lowered (Go's table was made so),
// "errno N" for what Go's table lacks. TestErrnoText compares them.
void mcpx_buf_errno(struct buf *w, int e) {
	const char *s = e >= 1 && e <= 132 ? strerror(e) : NULL;
	if (s == NULL || strncmp(s, "Unknown error", 13) == 0 || s[0] == 0) {
		mcpx_buf_str(w, "errno ");
		mcpx_buf_dec(w, (uint64_t)(e < 0 ? 0 : e));
		return;
	}
	char c = s[0];
	if (c >= 'A' && c <= 'Z' && s[1] >= 'a' && s[1] <= 'z')
		c = (char)(c - 'A' + 'a');
	mcpx_buf_add(w, &c, 1);
	mcpx_buf_str(w, s + 1);
}

// mcpx_errno_text is mcpx_buf_errno's text alone, for TestErrnoText (it
// leaks it).
const char *mcpx_errno_text(int e) {
	struct buf w = {0};
	mcpx_buf_errno(&w, e);
	mcpx_buf_add(&w, "", 1);
	return w.oom ? "" : w.b;
}

// The decoder, as wire.go's: fields in order, strings and byte slices as
// a uvarint length and their bytes, lists as a uvarint count and their
// items. Every string is copied NUL-terminated into an arena sized for
// the worst case (each string takes at least its length byte), and nul
// marks one that holds a NUL byte: C would read it cut short, so what
// Go's syscalls refuse with EINVAL (a path, an argument) is refused here.
struct dec {
	const unsigned char *b;
	size_t n;
	int err; // 1: cut short, 2: out of memory
	char *arena, *arena_end;
};

static uint64_t d_uint(struct dec *d) {
	uint64_t v = 0;
	for (size_t i = 0; i < d->n && i < 10; i++) {
		unsigned c = d->b[i];
		v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (c < 0x80) {
			d->b += i + 1;
			d->n -= i + 1;
			return v;
		}
	}
	if (!d->err)
		d->err = 1;
	d->n = 0;
	return 0;
}

static struct str d_str(struct dec *d) {
	struct str s = {"", 0, 0};
	uint64_t n = d_uint(d);
	if (n > d->n) {
		if (!d->err)
			d->err = 1;
		d->n = 0;
		return s;
	}
	if (n + 1 > (size_t)(d->arena_end - d->arena)) { // cannot happen: see mcpx_decode
		d->err = 2;
		d->n = 0;
		return s;
	}
	memcpy(d->arena, d->b, n);
	d->arena[n] = 0;
	s.p = d->arena;
	s.n = n;
	s.nul = memchr(s.p, 0, n) != NULL;
	d->arena += n + 1;
	d->b += n;
	d->n -= n;
	return s;
}

// d_count reads a list's length: no more than the bytes left, since every
// item takes one at least.
static size_t d_count(struct dec *d) {
	uint64_t n = d_uint(d);
	if (n > d->n) {
		if (!d->err)
			d->err = 1;
		d->n = 0;
		return 0;
	}
	return (size_t)n;
}

// d_alloc allocates n items of size each (n no more than the request's
// bytes), one more for execve's NULL.
static void *d_alloc(struct dec *d, size_t n, size_t size) {
	void *p = calloc(n + 1, size);
	if (p == NULL && !d->err)
		d->err = 2;
	return p;
}

static struct strs d_strs(struct dec *d) {
	struct strs l = {NULL, 0};
	size_t n = d_count(d);
	struct str *v = d_alloc(d, n, sizeof *v);
	if (v == NULL)
		return l;
	for (size_t i = 0; i < n; i++)
		v[i] = d_str(d);
	l.v = v;
	l.n = n;
	return l;
}

static void decode_landlock(struct dec *d, struct request *r) {
	r->landlock = 1;
	r->ll_fs = d_uint(d);
	r->ll_net = d_uint(d);
	r->ll_scoped = d_uint(d);
	size_t n = d_count(d);
	r->paths = d_alloc(d, n, sizeof *r->paths);
	for (size_t i = 0; r->paths != NULL && i < n; i++) {
		r->paths[i].path = d_str(d);
		r->paths[i].dir = d_uint(d);
		r->paths[i].file = d_uint(d);
	}
	r->npaths = r->paths == NULL ? 0 : n;
	n = d_count(d);
	r->ports = d_alloc(d, n, sizeof *r->ports);
	for (size_t i = 0; r->ports != NULL && i < n; i++) {
		r->ports[i].access = d_uint(d);
		r->ports[i].port = d_uint(d);
	}
	r->nports = r->ports == NULL ? 0 : n;
	r->ll_features = d_strs(d);
}

// mcpx_decode decodes the request in b (n bytes) into r; it returns NULL
// or the error's text, DecodeRequest's. What r points to is never freed.
const char *mcpx_decode(const unsigned char *b, size_t n, struct request *r) {
	// The arena: every string read takes its bytes and a NUL; each one
	// read before an error took a length byte at least, and after one
	// (the rest of a list, then a few fields) no more than the bytes
	// left when its list's count was read, and a few.
	struct dec d = {b, n, 0, malloc(2 * n + 16), NULL};
	memset(r, 0, sizeof *r);
	d.arena_end = d.arena == NULL ? NULL : d.arena + 2 * n + 16;
	if (d.arena == NULL)
		return "sandbox: the helper's request does not fit in memory";
	r->path = d_str(&d);
	r->args = d_strs(&d);
	r->env = d_strs(&d);
	r->loopback = d_uint(&d) != 0;
	r->network = d_strs(&d);
	r->proxy_port = (uint16_t)d_uint(&d);
	r->seccomp = d_str(&d);
	r->seccomp_features = d_strs(&d);
	if (d_uint(&d) != 0)
		decode_landlock(&d, r);
	size_t nl = d_count(&d);
	r->rlimits = d_alloc(&d, nl, sizeof *r->rlimits);
	for (size_t i = 0; r->rlimits != NULL && i < nl; i++) {
		r->rlimits[i].feature = d_str(&d);
		r->rlimits[i].resource = d_uint(&d);
		r->rlimits[i].cur = d_uint(&d);
		r->rlimits[i].max = d_uint(&d);
	}
	r->nrlimits = r->rlimits == NULL ? 0 : nl;
	r->capabilities = d_str(&d);
	r->fatal = d_strs(&d);
	size_t nj = d_count(&d);
	r->joins = d_alloc(&d, nj, sizeof *r->joins);
	for (size_t i = 0; r->joins != NULL && i < nj; i++) {
		r->joins[i].file = d_str(&d);
		r->joins[i].features = d_strs(&d);
	}
	r->njoins = r->joins == NULL ? 0 : nj;
	switch (d.err) {
	case 1:
		return "sandbox: the helper's message is cut short";
	case 2:
		return "sandbox: the helper's request does not fit in memory";
	}
	if (d.n != 0)
		return "sandbox: the helper's request has bytes past its end";
	return NULL;
}

// The replies (wire.go's Reply kinds).

static void send_reply(int fd, const struct buf *w) {
	if (!w->oom)
		send(fd, w->b, w->n, MSG_NOSIGNAL);
}

// fail sends why as a ReplyError and exits as the Go helper's fail does.
void mcpx_fail(int fd, struct buf *why) {
	struct buf w = {0};
	mcpx_buf_add(&w, "E", 1);
	if (why->oom)
		mcpx_buf_str(&w, "sandbox: the helper ran out of memory");
	else
		mcpx_buf_add(&w, why->b, why->n);
	send_reply(fd, &w);
	_exit(126);
}

void mcpx_fail_str(int fd, const char *why) {
	struct buf w = {0};
	mcpx_buf_str(&w, why);
	mcpx_fail(fd, &w);
}

// read_request reads the request, as readRequest does.
static void read_request(int fd, struct request *r) {
	struct msghdr m = {0};
	ssize_t n = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
	if (n < 0) {
		struct buf w = {0};
		mcpx_buf_str(&w, "sandbox: reading the policy: ");
		mcpx_buf_errno(&w, errno);
		mcpx_fail(fd, &w);
	}
	size_t size = n < 1 ? 1 : (size_t)n > MCPX_MAX_REQUEST ? MCPX_MAX_REQUEST : (size_t)n;
	unsigned char *b = malloc(size);
	if (b == NULL)
		mcpx_fail_str(fd, "sandbox: the helper's request does not fit in memory");
	struct iovec iov = {b, size};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	n = recvmsg(fd, &m, 0);
	if (n < 0) {
		struct buf w = {0};
		mcpx_buf_str(&w, "sandbox: reading the policy: ");
		mcpx_buf_errno(&w, errno);
		mcpx_fail(fd, &w);
	}
	if (n == 0)
		mcpx_fail_str(fd, "sandbox: the daemon closed before sending the policy");
	if (m.msg_flags & MSG_TRUNC)
		mcpx_fail_str(fd, "sandbox: the policy was cut short");
	const char *err = mcpx_decode(b, (size_t)n, r);
	if (err != NULL)
		mcpx_fail_str(fd, err);
}

// mcpx_write_file writes s to path, for the id maps and the cgroups; it returns
// 0 or an errno.
int mcpx_write_file(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	size_t n = strlen(s);
	int e = write(fd, s, n) == (ssize_t)n ? 0 : errno;
	close(fd);
	return e;
}

// make_namespaces enters new user and IPC namespaces, and a network one
// if what (MCPX_SANDBOX_UNSHARE) says "ipc,net", mapping this process's
// uid and gid to themselves and denying setgroups, as `unshare --user
// --map-current-user` does; in them it holds every capability, which the
// steps need (CAP_NET_ADMIN for lo) and dropCapabilities then drops. It
// runs after the request is read and this process has moved itself into
// its cgroups (mcpx_join), so what the namespaces cost is charged there.
static void make_namespaces(int fd, const char *what) {
	int flags = CLONE_NEWUSER | CLONE_NEWIPC;
	if (strcmp(what, "ipc,net") == 0)
		flags |= CLONE_NEWNET;
	else if (strcmp(what, "ipc") != 0) {
		struct buf w = {0};
		mcpx_buf_str(&w, "sandbox: " ENV_UNSHARE "=");
		mcpx_buf_add(&w, what, strnlen(what, 64));
		mcpx_buf_str(&w, " names no namespaces the helper makes (ipc, or ipc,net)");
		mcpx_fail(fd, &w);
	}
	uid_t uid = geteuid();
	gid_t gid = getegid();
	const char *step = "unshare";
	int e = unshare(flags) == 0 ? 0 : errno;
	char map[64];
	if (e == 0) {
		step = "denying setgroups";
		e = mcpx_write_file("/proc/self/setgroups", "deny");
	}
	if (e == 0) {
		step = "writing /proc/self/uid_map";
		snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
		e = mcpx_write_file("/proc/self/uid_map", map);
	}
	if (e == 0) {
		step = "writing /proc/self/gid_map";
		snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
		e = mcpx_write_file("/proc/self/gid_map", map);
	}
	if (e != 0) {
		struct buf w = {0};
		mcpx_buf_str(&w, "sandbox: making the child's namespaces: ");
		mcpx_buf_str(&w, step);
		mcpx_buf_str(&w, ": ");
		mcpx_buf_errno(&w, e);
		mcpx_fail(fd, &w);
	}
}

// parse_fd is atoi of helper_linux.go: digits only, not too many.
static int parse_fd(const char *s) {
	long n = 0;
	if (*s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > 1 << 20)
			return -1;
		n = n * 10 + (*s - '0');
	}
	return n > 1 << 30 ? -1 : (int)n;
}

int mcpx_contains(const struct strs *l, const struct str *s) {
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].n == s->n && memcmp(l->v[i].p, s->p, s->n) == 0)
			return 1;
	return 0;
}

// exec_program execs the request's program with its whole environment;
// it returns only if it could not, with the text of why, run's.
static void exec_program(int fd, const struct request *r) {
	int e = r->path.nul ? EINVAL : 0;
	char **argv = calloc(r->args.n + 1, sizeof *argv);
	char **envp = calloc(r->env.n + 1, sizeof *envp);
	if (argv == NULL || envp == NULL)
		e = ENOMEM;
	for (size_t i = 0; e == 0 && i < r->args.n; i++) {
		e = r->args.v[i].nul ? EINVAL : 0;
		argv[i] = (char *)r->args.v[i].p;
	}
	for (size_t i = 0; e == 0 && i < r->env.n; i++) {
		e = r->env.v[i].nul ? EINVAL : 0;
		envp[i] = (char *)r->env.v[i].p;
	}
	if (e == 0) {
		execve(r->path.p, argv, envp);
		e = errno;
	}
	struct buf w = {0};
	mcpx_buf_str(&w, "sandbox: starting ");
	mcpx_buf_add(&w, r->path.p, r->path.n);
	mcpx_buf_str(&w, ": ");
	mcpx_buf_errno(&w, e);
	if (e == EACCES)
		mcpx_buf_str(&w, " (is it under the policy's read or write paths?)");
	mcpx_fail(fd, &w);
}

// run is helper_linux.go's run: read the request, join the cgroups, make
// the namespaces if asked, confine, report, exec.
static void run(int fd, const char *unshare_what) {
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	struct request r;
	read_request(fd, &r);
	struct report rep = {.fatal = &r.fatal};
	mcpx_join(&r, &rep);
	if (unshare_what != NULL)
		make_namespaces(fd, unshare_what);
	struct buf why = {0};
	if (mcpx_confine(fd, &r, &rep, &why) != 0)
		mcpx_fail(fd, &why);
	struct buf w = {0};
	mcpx_buf_add(&w, "R", 1);
	mcpx_buf_uint(&w, rep.failures);
	mcpx_buf_add(&w, rep.body.b, rep.body.n);
	mcpx_buf_uint(&w, (uint64_t)rep.refused);
	if (w.oom || rep.body.oom || send(fd, w.b, w.n, MSG_NOSIGNAL) < 0 || rep.refused)
		_exit(126);
	exec_program(fd, &r);
}

// mcpx_stage runs when the binary is loaded, before the Go runtime: if
// the daemon started this process as the helper, it never returns.
__attribute__((constructor)) static void mcpx_stage(void) {
	const char *v = getenv(ENV_HELPER);
	if (v == NULL || getenv(ENV_GO_STAGE) != NULL)
		return;
	int fd = parse_fd(v);
	if (fd < 0) {
		struct buf w = {0};
		mcpx_buf_str(&w, "mcpx sandbox helper: " ENV_HELPER "=");
		mcpx_buf_str(&w, v);
		mcpx_buf_str(&w, " is no file descriptor\n");
		if (!w.oom && write(2, w.b, w.n) < 0) {
			// nowhere left to say it
		}
		_exit(126);
	}
	run(fd, getenv(ENV_UNSHARE));
}
