//go:build linux && cgo

// The C stage's steps (cstage_linux.c), each as helper_linux.go has it:
// the same system calls with the same arguments, the same texts when
// they fail.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cstage_linux.h"

// Landlock's system calls and structs, which older headers lack (the
// numbers are the same on every architecture).
#define SYS_LANDLOCK_CREATE_RULESET 444
#define SYS_LANDLOCK_ADD_RULE 445
#define SYS_LANDLOCK_RESTRICT_SELF 446
#define LANDLOCK_RULE_PATH_BENEATH_ 1
#define LANDLOCK_RULE_NET_PORT_ 2
#define LANDLOCK_ACCESS_NET_BIND_TCP_ 1

struct ll_ruleset_attr {
	uint64_t fs, net, scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
	uint64_t allowed_access, port;
};

// Secure bits (linux/securebits.h): no capabilities for uid 0 on exec,
// no ambient ones raised, both locked.
#define SECBITS ((1 << 0) | (1 << 1) | (1 << 6) | (1 << 7))

// wrapped is the text of Go's wrap(what, errno e).
static struct buf wrapped(const char *what, int e) {
	struct buf w = {0};
	mcpx_buf_str(&w, what);
	mcpx_buf_str(&w, ": ");
	mcpx_buf_errno(&w, e);
	return w;
}

// record is confine's check: a step failed (why) that enforces features;
// nothing if it enforces none.
static void record(struct report *rep, const struct strs *features, const struct buf *why) {
	if (features->n == 0)
		return;
	rep->failures++;
	mcpx_buf_uint(&rep->body, features->n);
	for (size_t i = 0; i < features->n; i++) {
		mcpx_buf_uint(&rep->body, features->v[i].n);
		mcpx_buf_add(&rep->body, features->v[i].p, features->v[i].n);
		if (mcpx_contains(rep->fatal, &features->v[i]))
			rep->refused = 1;
	}
	mcpx_buf_uint(&rep->body, why->n);
	mcpx_buf_add(&rep->body, why->b, why->n);
}

static long prctl3(int option, unsigned long a2, unsigned long a3) {
	return syscall(SYS_prctl, option, a2, a3, 0L, 0L);
}

// loopback_up brings up lo in this process's network namespace: its
// errno, or 0.
static int loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	int e = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		e = errno;
	ifr.ifr_flags |= IFF_UP;
	if (e == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		e = errno;
	close(fd);
	return e;
}

// send_listener makes the proxy's listener on 127.0.0.1:port (plain TCP)
// and sends it to the daemon, keeping no copy: its errno, or 0.
static int send_listener(int fd, uint16_t port) {
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (lfd < 0)
		return errno;
	int one = 1, e = 0;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 128) < 0)
		e = errno;
	if (e == 0) {
		char kind = 'L';
		struct iovec iov = {&kind, 1};
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		memset(&ctl, 0, sizeof ctl);
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
		if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
			e = errno;
	}
	close(lfd);
	return e;
}

// install_seccomp is InstallSeccomp: prog is 8 bytes an instruction,
// little-endian as the daemon encodes them.
static int install_seccomp(const struct str *prog) {
	size_t n = prog->n / 8;
	if (prog->n % 8 != 0 || n > 4096)
		return EINVAL;
	struct sock_filter *f = calloc(n, sizeof *f);
	if (f == NULL)
		return ENOMEM;
	const unsigned char *b = (const unsigned char *)prog->p;
	for (size_t i = 0; i < n; i++, b += 8) {
		f[i].code = (uint16_t)(b[0] | b[1] << 8);
		f[i].jt = b[2];
		f[i].jf = b[3];
		f[i].k = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
	}
	struct sock_fprog fp = {(unsigned short)n, f};
	return prctl3(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (unsigned long)&fp) < 0 ? errno : 0;
}

// add_path_rule is addPathRule: a path that cannot be opened (or holds a
// NUL byte, which Go's open refuses) gets no rule and is no failure.
static int add_path_rule(int ruleset, const struct path_rule *p, struct buf *why) {
	int fd = p->path.nul ? -1 : open(p->path.p, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int e = fstat(fd, &st) < 0 ? errno : 0;
	if (e == 0) {
		struct ll_path_beneath_attr a = {S_ISDIR(st.st_mode) ? p->dir : p->file, fd};
		if (syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH_, &a, 0) < 0)
			e = errno;
	}
	close(fd);
	if (e != 0) {
		mcpx_buf_str(why, "landlock: ");
		mcpx_buf_add(why, p->path.p, p->path.n);
		mcpx_buf_str(why, ": ");
		mcpx_buf_errno(why, e);
	}
	return e;
}

// restrict_landlock is restrictLandlock: 0, or why holds the failure.
static int restrict_landlock(const struct request *r, struct buf *why) {
	struct ll_ruleset_attr attr = {r->ll_fs, r->ll_net, r->ll_scoped};
	int fd = (int)syscall(SYS_LANDLOCK_CREATE_RULESET, &attr, sizeof attr, 0);
	if (fd < 0) {
		*why = wrapped("landlock_create_ruleset", errno);
		return -1;
	}
	int e = 0;
	for (size_t i = 0; e == 0 && i < r->npaths; i++)
		e = add_path_rule(fd, &r->paths[i], why);
	for (size_t i = 0; e == 0 && i < r->nports; i++) {
		struct ll_net_port_attr a = {r->ports[i].access, r->ports[i].port};
		if (syscall(SYS_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_NET_PORT_, &a, 0) < 0) {
			e = errno;
			mcpx_buf_str(why, a.allowed_access == LANDLOCK_ACCESS_NET_BIND_TCP_ ? "landlock: bind to TCP port " : "landlock: connect to TCP port ");
			mcpx_buf_dec(why, a.port);
			mcpx_buf_str(why, ": ");
			mcpx_buf_errno(why, e);
		}
	}
	if (e == 0 && syscall(SYS_LANDLOCK_RESTRICT_SELF, fd, 0) < 0) {
		e = errno;
		*why = wrapped("landlock_restrict_self", e);
	}
	close(fd);
	return e == 0 ? 0 : -1;
}

// drop_capabilities is dropCapabilities: 0, or why holds the failure.
static int drop_capabilities(struct buf *why) {
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) < 0) {
		*why = wrapped("capget", errno);
		return -1;
	}
	if (data[0].permitted == 0 && data[1].permitted == 0)
		return 0;
	if (prctl3(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0) < 0) {
		*why = wrapped("clearing ambient capabilities", errno);
		return -1;
	}
	for (unsigned long c = 0;; c++) {
		if (prctl3(PR_CAPBSET_DROP, c, 0) == 0)
			continue;
		if (errno == EINVAL)
			break; // past the kernel's last capability
		int e = errno;
		mcpx_buf_str(why, "dropping capability ");
		mcpx_buf_dec(why, c);
		mcpx_buf_str(why, " from the bounding set: ");
		mcpx_buf_errno(why, e);
		return -1;
	}
	if (prctl3(PR_SET_SECUREBITS, SECBITS, 0) < 0) {
		*why = wrapped("setting securebits", errno);
		return -1;
	}
	data[0].inheritable = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data) < 0) {
		*why = wrapped("clearing inheritable capabilities", errno);
		return -1;
	}
	return 0;
}

// mcpx_join is join: this process moves itself into each cgroup of the
// request, writing "0" (the writer: this thread, the only one) to its file.
void mcpx_join(const struct request *r, struct report *rep) {
	for (size_t i = 0; i < r->njoins; i++) {
		const struct join *j = &r->joins[i];
		int e = j->file.nul ? EINVAL : mcpx_write_file(j->file.p, "0");
		if (e != 0) {
			struct buf w = {0};
			mcpx_buf_str(&w, "moving into the cgroup ");
			mcpx_buf_add(&w, j->file.p, j->file.n);
			mcpx_buf_str(&w, ": ");
			mcpx_buf_errno(&w, e);
			record(rep, &j->features, &w);
		}
	}
}

// mcpx_confine is confine: the network, no_new_privs, seccomp, Landlock,
// the rlimits, capabilities, each failure recorded in rep. It returns
// non-zero, with why, for what must not be skipped.
int mcpx_confine(int fd, const struct request *r, struct report *rep, struct buf *why) {
	struct buf w = {0};
	int e;
	if (r->loopback && (e = loopback_up()) != 0) {
		w = wrapped("bringing lo up", e);
		record(rep, &r->network, &w);
	}
	if (r->proxy_port != 0 && (e = send_listener(fd, r->proxy_port)) != 0) {
		mcpx_buf_str(why, "sandbox: listening on the child's 127.0.0.1:");
		mcpx_buf_dec(why, r->proxy_port);
		mcpx_buf_str(why, " for the proxy: ");
		mcpx_buf_errno(why, e);
		return -1;
	}
	if (prctl3(PR_SET_NO_NEW_PRIVS, 1, 0) < 0) { // Landlock needs it
		*why = wrapped("sandbox: prctl(PR_SET_NO_NEW_PRIVS)", errno);
		return -1;
	}
	if (r->seccomp.n > 0 && (e = install_seccomp(&r->seccomp)) != 0) {
		w = wrapped("installing the seccomp filter", e);
		record(rep, &r->seccomp_features, &w);
	}
	if (r->landlock) {
		struct buf lw = {0};
		if (restrict_landlock(r, &lw) != 0)
			record(rep, &r->ll_features, &lw);
	}
	// Last: a low open-files limit must not fail the steps above, and a
	// limit above the daemon's may need the capabilities dropped next.
	for (size_t i = 0; i < r->nrlimits; i++) {
		const struct rlim *l = &r->rlimits[i];
		uint64_t lim[2] = {l->cur, l->max};
		if (syscall(SYS_prlimit64, 0, (unsigned long)l->resource, lim, NULL) < 0) {
			struct buf lw = {0};
			mcpx_buf_errno(&lw, errno);
			struct strs f = {(struct str *)&l->feature, 1};
			record(rep, &f, &lw);
		}
	}
	struct buf cw = {0};
	if (drop_capabilities(&cw) != 0) {
		struct strs f = {(struct str *)&r->capabilities, 1};
		record(rep, &f, &cw);
	}
	return 0;
}
