// Package sandbox confines one child process to a Policy with what the
// Linux kernel enforces: Landlock, user and network namespaces, rlimits,
// cgroups.
//
//	cell, err := sandbox.Prepare(cmd, policy)
//	...
//	err = cmd.Start()
//	enforcement, err := cell.Started(ctx)
package sandbox
