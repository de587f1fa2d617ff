package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
)

// Every output is written where no reader sees it half-done. A file
// written on its own (a shard, shrink's scenario, a trace, a profile) goes
// to a temporary file beside its name, is synced, and is renamed over the
// name: a reader, or a run killed halfway, sees the previous file or the
// new one. The outputs that belong together (run's report.html and
// summary.json) are a set, published in one step as a whole directory
// (outset.go). A rename replaces only a regular file or a symlink (never
// writing through the symlink): a device, a named pipe or a socket at an
// output's name is refused, whoever runs xdssim, root included.

// output is one output to write: a file of a set, by its name in the set's
// directory, or a file of its own, by its path and the flag that gave it.
type output struct {
	// flag is the flag that named the file ("metrics"); "" for a file of
	// a set.
	flag string
	// name is the file's name in its set's directory, or its path.
	name  string
	write func(io.Writer) error
}

// flagName is how messages name the flag: "--metrics".
func flagName(flag string) string {
	if flag == "" {
		return ""
	}
	return "--" + flag
}

// refer prefixes a message about the output name with the flag that gave
// it: "--metrics m.om: ...".
func refer(flag, name string) string {
	if flag == "" {
		return name
	}
	return flagName(flag) + " " + name
}

// checkReplaceable reports whether a rename may put an output at name: it
// does not exist, or it is a regular file or a symlink (not to a
// directory). A device, a named pipe or a socket is refused: renaming over
// one (as root may) would replace /dev/null with a regular file.
func checkReplaceable(flag, name string) error {
	if c, err := canonical(name); err == nil && systemPath(c) != "" {
		return badInput("%s: is in %s, expected a file of your own", refer(flag, name), systemPath(c))
	}
	st, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badInput("%s: %v", refer(flag, name), unwrapPath(err))
	case st.Mode().IsRegular():
		return nil
	case st.Mode()&fs.ModeSymlink != 0:
		// The rename replaces the link, but a link to something that is
		// not a file (a device, a directory) or to a file descriptor
		// (/dev/stdout is /proc/self/fd/1) is not meant as a file.
		if target, err := filepath.EvalSymlinks(name); err == nil && systemPath(target) != "" {
			return badInput("%s: is a symlink to %s, expected a file", refer(flag, name), target)
		}
		t, err := os.Stat(name)
		if err != nil || t.Mode().IsRegular() {
			return nil
		}
		return badInput("%s: is a symlink to %s, expected a file", refer(flag, name), scenarios.FileKind(t.Mode()))
	case st.IsDir():
		return badInput("%s: is a directory, expected a file", refer(flag, name))
	}
	return badInput("%s: is %s; an output replaces only a regular file or a symlink", refer(flag, name), scenarios.FileKind(st.Mode()))
}

// systemPath returns the system directory (/dev, /proc, /sys) that holds
// the absolute path p, or "": no output is written there.
func systemPath(p string) string {
	for _, dir := range []string{"/dev", "/proc", "/sys"} {
		if within(p, dir) {
			return dir
		}
	}
	return ""
}

// checkOutputFile reports, before a run, whether an output file could be
// written at name: name is not empty, checkReplaceable allows it, and its
// directory exists and takes new files.
func checkOutputFile(flag, name string) error {
	if name == "" {
		return badInput("%s: expected a path, found an empty value", flagName(flag))
	}
	if err := checkReplaceable(flag, name); err != nil {
		return err
	}
	fh, err := os.CreateTemp(filepath.Dir(name), ".xdssim-check-*")
	if err != nil {
		return badInput("%s: cannot write there: %v", refer(flag, name), unwrapPath(err))
	}
	fh.Close()
	os.Remove(fh.Name())
	return nil
}

// stagedFile is an output written to a temporary file beside its name,
// synced, and not yet renamed to it.
type stagedFile struct {
	flag, name, tmp string
	sum             [sha256.Size]byte
	size            int64
}

// stage writes an output to a temporary file beside its name and syncs
// it; nothing is visible under the name until commit. The temporary file
// is removed on any failure, a panic of write included, and held with the
// supervisor while it lives (holdTemp), so that a crash does not leave it.
func stage(o output) (*stagedFile, error) {
	fh, err := createTemp(o.flag, o.name)
	if err != nil {
		return nil, err
	}
	return finishWrite(fh, o)
}

// createTemp creates the temporary file of output name, in its directory.
func createTemp(flag, name string) (*os.File, error) {
	if name == "" {
		return nil, badInput("%s: expected a file name, found an empty one", flagName(flag))
	}
	if err := checkReplaceable(flag, name); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	fh, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, badInput("%s: %v", refer(flag, name), unwrapPath(err))
	}
	holdTemp(fh.Name())
	return fh, nil
}

// finishWrite writes o into its temporary file fh and makes it durable
// (mode, sync, close); on failure, or a panic of o.write, fh is removed.
func finishWrite(fh *os.File, o output) (*stagedFile, error) {
	s := &stagedFile{flag: o.flag, name: o.name, tmp: fh.Name()}
	done := false
	defer func() {
		if !done {
			fh.Close()
			s.discard()
		}
	}()
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(fh, h)}
	if err := o.write(cw); err != nil {
		return nil, writeError(refer(o.flag, o.name), err)
	}
	if err := syncClose(fh); err != nil {
		return nil, writeError(refer(o.flag, o.name), err)
	}
	done = true
	s.size = cw.n
	h.Sum(s.sum[:0])
	return s, nil
}

// syncClose gives a written file its mode, syncs it and closes it.
func syncClose(fh *os.File) error {
	err := fh.Chmod(0o644)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ioError is a failure of the file system under an output (a full disk,
// a quota, a rename refused): not bad input and not a bug of xdssim. It
// exits 1 without the request to report it; kept says what the outputs
// are then.
type ioError struct {
	err  error
	kept string
}

func (e ioError) Error() string { return e.err.Error() }
func (e ioError) Unwrap() error { return e.err }

// keptPrevious is what ioError says when nothing was replaced.
const keptPrevious = "the previous outputs are kept"

// writeError wraps an error of writing output what: the file system's own
// errors become ioError, anything else (the renderer's) stays internal.
func writeError(what string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return ioError{fmt.Errorf("writing %s: %w", what, err), keptPrevious}
	}
	return fmt.Errorf("writing %s: %w", what, err)
}

// commit renames the staged file to its name and syncs the directory, so
// that the rename survives a crash of the machine. The name is checked
// again just before: what stands there now must still be replaceable.
func (s *stagedFile) commit() error {
	if err := checkReplaceable(s.flag, s.name); err != nil {
		s.discard()
		return err
	}
	if err := publishHook("rename " + filepath.Base(s.name)); err != nil {
		s.discard()
		return ioError{fmt.Errorf("writing %s: %w", refer(s.flag, s.name), err), keptPrevious}
	}
	if err := os.Rename(s.tmp, s.name); err != nil {
		s.discard()
		return ioError{fmt.Errorf("writing %s: %w", refer(s.flag, s.name), err), keptPrevious}
	}
	releaseTemp(s.tmp)
	syncDir(filepath.Dir(s.name))
	return nil
}

// discard removes the temporary file of an output that will not be
// committed.
func (s *stagedFile) discard() {
	os.Remove(s.tmp)
	releaseTemp(s.tmp)
}

// syncDir syncs a directory's entries; file systems that cannot sync a
// directory are not an error.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// writeFile writes one output file of its own atomically (see stage).
func writeFile(flag, name string, write func(io.Writer) error) error {
	beginWriting()
	removeStaleTemps(name)
	s, err := stage(output{flag: flag, name: name, write: write})
	if err != nil {
		return err
	}
	return s.commit()
}

// removeStaleTemps removes the temporary files of output name that a
// killed run left behind, so that they do not pile up: those older than
// this process whose process is gone (see staleTemp).
func removeStaleTemps(name string) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	old, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+".tmp-*"))
	for _, f := range old {
		if st, err := os.Lstat(f); err == nil && st.Mode().IsRegular() && st.ModTime().Before(processStart) {
			os.Remove(f)
		}
	}
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}

// unwrapPath drops the operation and path an *os.PathError repeats, when
// the message names the path already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// cpuProfile is a CPU profile being written to a temporary file; finish
// renames it to its name.
type cpuProfile struct {
	fh   *os.File
	name string
	done bool
}

// startCPUProfile starts profiling the CPU into a temporary file beside
// name.
func startCPUProfile(name string) (*cpuProfile, error) {
	fh, err := createTemp("cpuprofile", name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		os.Remove(fh.Name())
		releaseTemp(fh.Name())
		return nil, err
	}
	return &cpuProfile{fh: fh, name: name}, nil
}

// finish stops the profile and renames it to its name.
func (p *cpuProfile) finish() error {
	beginWriting()
	pprof.StopCPUProfile()
	p.done = true
	s := &stagedFile{flag: "cpuprofile", name: p.name, tmp: p.fh.Name()}
	if err := syncClose(p.fh); err != nil {
		s.discard()
		return writeError(refer(s.flag, s.name), err)
	}
	return s.commit()
}

// abandon stops a profile that finish did not, and removes its file.
func (p *cpuProfile) abandon() {
	if !p.done {
		pprof.StopCPUProfile()
		p.fh.Close()
		os.Remove(p.fh.Name())
		releaseTemp(p.fh.Name())
	}
}

// publishHook is called at each step of publishing outputs, with the
// step's name; an error fails the step. It does nothing but in tests,
// which kill or fail a run at each step (TestPublishingIsAllOrNothing).
var publishHook = func(step string) error { return nil }

// writeBytes is an output's write function that writes b.
func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}
