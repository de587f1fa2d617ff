package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"
)

// Outputs are written atomically: each file goes to a temporary file in
// its own directory, is synced, and is renamed over the final name. A
// rename replaces a symlink standing at the final name; it never writes
// through it to the symlink's target. A reader, or a run killed halfway,
// sees a file's previous content or its new one, never a mix.

// stagedFile is an output written to a temporary file, not yet renamed to
// its final name.
type stagedFile struct {
	name, tmp string
}

// stage writes an output to a temporary file beside name and syncs it.
// Nothing is visible under name until commit. A path that cannot be
// created is bad input (exit 2); a failure while writing is internal, or
// the file system's (ioError).
func stage(name string, write func(io.Writer) error) (*stagedFile, error) {
	fh, err := createTemp(name)
	if err != nil {
		return nil, err
	}
	if err := write(fh); err != nil {
		fh.Close()
		os.Remove(fh.Name())
		return nil, writeError(name, err)
	}
	return finishTemp(fh, name)
}

// createTemp creates the temporary file an output named name is written
// to, in name's directory.
func createTemp(name string) (*os.File, error) {
	if name == "" {
		return nil, badInput("expected a file name, found an empty one")
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return nil, badInput("%s: is a directory, expected a file", name)
	}
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	fh, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, badInput("%s: %v", name, unwrapPath(err))
	}
	return fh, nil
}

// finishTemp makes the written temporary file fh of output name durable
// (mode, sync, close) and returns it staged; on failure it is removed.
func finishTemp(fh *os.File, name string) (*stagedFile, error) {
	s := &stagedFile{name: name, tmp: fh.Name()}
	err := fh.Chmod(0o644)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.discard()
		return nil, writeError(name, err)
	}
	return s, nil
}

// ioError is a failure of the file system under an output (a full disk,
// a quota, a device error): not bad input and not a bug of xdssim. It
// exits 1 without the request to report it.
type ioError struct{ err error }

func (e ioError) Error() string { return e.err.Error() }
func (e ioError) Unwrap() error { return e.err }

// writeError wraps an error of writing output name: the file system's own
// errors become ioError, anything else (the renderer's) stays internal.
func writeError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return ioError{fmt.Errorf("writing %s: %w", name, err)}
	}
	return fmt.Errorf("writing %s: %w", name, err)
}

// commit renames the staged file to its final name and syncs the
// directory, so that the rename survives a crash of the machine.
func (s *stagedFile) commit() error {
	if err := os.Rename(s.tmp, s.name); err != nil {
		// The path was checked before the run: the file system refused.
		os.Remove(s.tmp)
		return ioError{fmt.Errorf("writing %s: %w", s.name, err)}
	}
	syncDir(filepath.Dir(s.name))
	return nil
}

// discard removes the temporary file of an output that will not be
// committed.
func (s *stagedFile) discard() { os.Remove(s.tmp) }

// processStart is when this process started: a temporary file of an
// output older than it was left by a run that was killed.
var processStart = time.Now()

// removeStaleTemps removes the temporary files of output name that a
// killed run left behind (kill -9 between stage and commit), so that
// they do not pile up. One younger than this process may belong to a run
// still writing, and is left alone.
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

// syncDir syncs a directory's entries; file systems that cannot sync a
// directory are not an error.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// writeFile writes one output atomically (see stage).
func writeFile(name string, write func(io.Writer) error) error {
	s, err := stage(name, write)
	if err != nil {
		return err
	}
	return s.commit()
}

// writeSet writes several outputs that belong together, such as a run's
// report.html and summary.json. Every file is staged before any is
// renamed; the marker (the last file) is removed first and renamed last,
// so a directory that holds the marker holds a complete set, from one
// run. A failure leaves the previous outputs, or the previous outputs
// without their marker.
func writeSet(files []string, writes []func(io.Writer) error) error {
	for _, name := range files {
		removeStaleTemps(name)
	}
	var staged []*stagedFile
	discard := func() {
		for _, s := range staged {
			s.discard()
		}
	}
	for i, name := range files {
		s, err := stage(name, writes[i])
		if err != nil {
			discard()
			return err
		}
		staged = append(staged, s)
	}
	marker := staged[len(staged)-1]
	if err := os.Remove(marker.name); err != nil && !errors.Is(err, os.ErrNotExist) {
		discard()
		return ioError{fmt.Errorf("replacing %s: %w", marker.name, err)}
	}
	for i, s := range staged {
		if err := s.commit(); err != nil {
			for _, rest := range staged[i+1:] {
				rest.discard()
			}
			return err
		}
	}
	return nil
}

// checkWritable reports, before a run, whether an output file could be
// created at name: its directory exists (or can be made, with mkdir) and
// takes new files, and name is not a directory.
func checkWritable(flag, name string, mkdir bool) error {
	if name == "" {
		return badInput("--%s: expected a path, found an empty value", flag)
	}
	dir := filepath.Dir(name)
	if mkdir {
		dir = name
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return badInput("--%s %s: %v", flag, name, unwrapPath(err))
		}
	} else if st, err := os.Stat(name); err == nil && st.IsDir() {
		return badInput("--%s %s: is a directory, expected a file", flag, name)
	}
	fh, err := os.CreateTemp(dir, ".xdssim-check-*")
	if err != nil {
		return badInput("--%s %s: cannot write there: %v", flag, name, unwrapPath(err))
	}
	fh.Close()
	os.Remove(fh.Name())
	return nil
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
	fh, err := createTemp(name)
	if err != nil {
		return nil, badInput("--cpuprofile %v", err)
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		os.Remove(fh.Name())
		return nil, err
	}
	return &cpuProfile{fh: fh, name: name}, nil
}

// finish stops the profile and renames it to its name.
func (p *cpuProfile) finish() error {
	pprof.StopCPUProfile()
	p.done = true
	s, err := finishTemp(p.fh, p.name)
	if err != nil {
		return err
	}
	return s.commit()
}

// abandon stops a profile that finish did not, and removes its file.
func (p *cpuProfile) abandon() {
	if !p.done {
		pprof.StopCPUProfile()
		p.fh.Close()
		os.Remove(p.fh.Name())
	}
}
