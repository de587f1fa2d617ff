//go:build !linux

package main

// exchangeDirs cannot swap two names in one step here: publishing uses
// two renames (see outset.go).
func exchangeDirs(a, b string) error { return errNoExchange }

// mountPoint cannot tell a mount point here: renaming one fails, and the
// previous outputs are kept.
func mountPoint(path string) bool { return false }
