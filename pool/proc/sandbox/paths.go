package sandbox

import "os"

// systemRead are what nearly every program needs to read to run: the
// system's programs and libraries, the dynamic linker's cache, TLS roots,
// name resolution and time zone files, /proc (its own entries; see the
// package doc for what else it shows) and the CPU topology runtimes size
// their thread pools by.
var systemRead = []string{
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr",
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/usr/share/zoneinfo",
	"/etc/mime.types", "/run/systemd/resolve",
	"/proc", "/sys/devices/system/cpu",
}

// devices are the character devices programs open read-write as a matter
// of course.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// SystemRead returns those of the system's directories and files every
// program needs to read (its libraries, /etc basics, /proc) that exist
// here: a base for Policy.Read. It holds no home directory, no /tmp and
// nothing of the daemon's state.
func SystemRead() []string { return existing(systemRead) }

// Devices returns those of /dev/null, /dev/zero, /dev/full, /dev/random and
// /dev/urandom that exist here: a base for Policy.Write.
func Devices() []string { return existing(devices) }

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
