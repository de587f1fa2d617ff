package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

// A set of outputs (run's report.html and summary.json, with --metrics
// when it is in the same directory; sweep's and merge's sweep.json,
// sweep.csv and sweep.html; compare's and --find's) is published as a
// whole directory, in one step:
//
//  1. every file of the set is written, synced, into a new staging
//     directory beside the output directory (.NAME.xdssim-new-PID-*),
//     with a manifest, .xdssim-set.json, naming each file with its size
//     and SHA-256;
//  2. the other files the output directory holds (shards, notes, a
//     profile: anything but the previous set, which its manifest names)
//     are hard-linked (or copied) into the staging directory;
//  3. the staging directory and the output directory exchange names in
//     one rename (renameat2 RENAME_EXCHANGE), and the previous set, now
//     under the staging name, is removed.
//
// Before step 3 the output directory is untouched: a failure, a refused
// rename or a kill leaves the whole previous set. After it the directory
// is the whole new set. On a file system that cannot exchange two names,
// step 3 is two renames (the previous directory aside, the new one in its
// place), between which the directory does not exist; the next command to
// write there (or the supervising parent, when only the child was killed)
// puts the previous one back. Never is there a mix of two sets.
//
// Because the directory is replaced whole, an output directory may hold
// only files (and symlinks): one that holds a directory, a device or a
// pipe, is a mount point, or is the current directory, is refused before
// the run.

// manifestName is the file of a published set that names its files.
const manifestName = ".xdssim-set.json"

// manifestSchema is the manifest's "schema".
const manifestSchema = "xdssim.set/v1"

// manifest names the run that wrote a set (identity.go) and the files of
// the set, and the outputs of the same command written outside its
// directory (--metrics elsewhere), each with its size and SHA-256, so that
// a reader can tell whether such a file is of this set. It is
// deterministic: the same run writes the same manifest. "run" was added
// to xdssim.set/v1 without changing its schema: a manifest without it is
// an older xdssim's, whose set counts as another run's.
type manifest struct {
	Schema   string          `json:"schema"`
	Run      *runIdentity    `json:"run,omitempty"`
	Files    []manifestEntry `json:"files"`
	External []manifestEntry `json:"external"`
}

type manifestEntry struct {
	// Name is a file of the set; Flag names an external file by the flag
	// that gave its path.
	Name   string `json:"name,omitempty"`
	Flag   string `json:"flag,omitempty"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// outDir is an output directory, checked before a run, where a set is
// published.
type outDir struct {
	// flag is the flag that named it ("out"), name the path as given.
	flag, name string
	// path is its absolute path, every symlink resolved: a symlink to a
	// directory is followed, and the directory it points to is replaced.
	path string
	// warn receives what went wrong after the set was published (a
	// previous set that could not be removed).
	warn io.Writer
	// id is the run whose set is published here (claim), and overwrite
	// says that it may replace another run's.
	id        *runIdentity
	overwrite bool
}

// processStart is when this process started: a temporary file or
// directory older than it, of a process that is gone, was left by a run
// that was killed.
var processStart = time.Now()

// checkOutDir checks, before a run, that a set can be published at the
// directory name: it is a directory (made, with its parents, when it does
// not exist), it holds only files and symlinks, it is not a mount point or
// the current directory (or one holding it), and its parent takes new
// directories.
func checkOutDir(flag, name string, warn io.Writer) (*outDir, error) {
	if name == "" {
		return nil, badInput("%s: expected a path, found an empty value", flagName(flag))
	}
	fail := func(format string, args ...any) error {
		return badInput("%s: "+format, append([]any{refer(flag, name)}, args...)...)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fail("%v", err)
	}
	if filepath.Dir(abs) == abs {
		return nil, fail("is the root directory: give a directory of its own for the outputs")
	}
	d := &outDir{flag: flag, name: name, warn: warn}
	if lst, err := os.Lstat(abs); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return nil, fail("is a symlink to nothing, expected a directory")
		}
	}
	recoverInterrupted(abs)
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return nil, fail("is %s, expected a directory", kindOf(st.Mode()))
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fail("%v", unwrapPath(err))
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fail("%v", unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fail("is %s, expected a directory", kindOf(st.Mode()))
	}
	if d.path, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fail("%v", unwrapPath(err))
	}
	parent, base := filepath.Split(d.path)
	if base == "" || filepath.Dir(d.path) == d.path {
		return nil, fail("is the root directory: give a directory of its own for the outputs")
	}
	if wd, err := os.Getwd(); err == nil {
		if w, err := filepath.EvalSymlinks(wd); err == nil && within(w, d.path) {
			return nil, fail("is the current directory, or holds it: publishing the outputs replaces the directory whole; give a directory of its own, such as %s",
				filepath.Join(name, "out"))
		}
	}
	if err := d.checkContents(); err != nil {
		return nil, err
	}
	if mountPoint(d.path) {
		return nil, fail("is a mount point, which cannot be replaced in one step: give a directory inside it, such as %s", filepath.Join(name, "out"))
	}
	probe, err := os.MkdirTemp(parent, "."+base+".xdssim-check-*")
	if err != nil {
		return nil, fail("cannot make a directory beside it, in %s: %v", parent, unwrapPath(err))
	}
	os.Remove(probe)
	return d, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// kindOf names the kind of a file, for a message: "a file", "a device".
func kindOf(m fs.FileMode) string {
	if m.IsRegular() {
		return "a file"
	}
	return scenarios.FileKind(m)
}

// checkContents refuses an output directory that holds anything but files
// and symlinks: publishing a set replaces the directory, and carries over
// only those.
func (d *outDir) checkContents() error {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return badInput("%s: %v", refer(d.flag, d.name), unwrapPath(err))
	}
	for _, e := range ents {
		t := e.Type()
		if t.IsRegular() || t&fs.ModeSymlink != 0 {
			continue
		}
		return badInput("%s: holds %s, %s: publishing the outputs replaces the directory whole, keeping only the files in it; give a directory of its own, such as %s",
			refer(d.flag, d.name), e.Name(), scenarios.FileKind(t), filepath.Join(d.name, "out"))
	}
	return nil
}

// contains reports whether the output name (a path) is a file directly in
// the directory, and returns its name there.
func (d *outDir) contains(name string) (string, bool) {
	p, err := canonical(name)
	if err != nil || filepath.Dir(p) != d.path {
		return "", false
	}
	return filepath.Base(p), true
}

// canonical is the path an output name is written at: absolute, with its
// directory's symlinks resolved (the name itself, a symlink or not, is
// what a rename replaces).
func canonical(name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// namedPath is an output path and the flag that gave it ("" for a file of
// a set).
type namedPath struct{ flag, path string }

// checkDistinct refuses two outputs of one command that are the same
// file: the second would silently replace the first.
func checkDistinct(outs []namedPath) error {
	seen := map[string]namedPath{}
	for _, o := range outs {
		p, err := canonical(o.path)
		if err != nil {
			continue // checkOutputFile says what is wrong with it
		}
		if prev, dup := seen[p]; dup {
			return badInput("%s and %s are the same file: give each output its own path", describeOutput(prev), describeOutput(o))
		}
		seen[p] = o
	}
	return nil
}

func describeOutput(o namedPath) string {
	if o.flag == "" {
		return o.path
	}
	return refer(o.flag, o.path)
}

// publish writes files as one set in the directory, and external (files of
// the same command elsewhere, such as --metrics) each on its own. The
// external files are written first to temporary files, so that the
// manifest names their SHA-256; the set is published; then each external
// file is renamed over its name. A failure before the set is published
// leaves every previous output; one after it leaves the new set, and the
// error says which external file is still the previous one.
func (d *outDir) publish(files, external []output) error {
	beginWriting()
	var ext []*stagedFile
	discard := func(ss []*stagedFile) {
		for _, s := range ss {
			s.discard()
		}
	}
	for _, o := range external {
		removeStaleTemps(o.name)
		s, err := stage(o)
		if err != nil {
			discard(ext)
			return err
		}
		ext = append(ext, s)
	}
	if err := d.publishSet(files, ext); err != nil {
		discard(ext)
		return err
	}
	for i, s := range ext {
		if err := s.commit(); err != nil {
			discard(ext[i+1:])
			return ioError{err, fmt.Sprintf("%s holds this run's outputs, but %s is still the previous one (its SHA-256 is not the one %s names)",
				d.name, s.name, filepath.Join(d.name, manifestName))}
		}
	}
	return nil
}

// publishSet writes the set files and the manifest into a staging
// directory beside d, carries over d's other files, and puts the staging
// directory in d's place (see the top of this file).
func (d *outDir) publishSet(files []output, ext []*stagedFile) error {
	parent, base := filepath.Dir(d.path), filepath.Base(d.path)
	removeStaleSets(d.path)
	staging, err := os.MkdirTemp(parent, "."+base+".xdssim-new-"+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return ioError{fmt.Errorf("writing %s: %w", d.name, err), keptPrevious}
	}
	holdTemp(staging)
	// The new directory gets the permissions of the one it replaces
	// (MkdirTemp makes it private).
	mode := fs.FileMode(0o755)
	if st, err := os.Stat(d.path); err == nil {
		mode = st.Mode().Perm()
	}
	os.Chmod(staging, mode)
	published := false
	defer func() {
		if !published {
			os.RemoveAll(staging)
			releaseTemp(staging)
		}
	}()
	failed := func(err error) error {
		return ioError{fmt.Errorf("writing %s: %w", d.name, err), keptPrevious}
	}
	m := manifest{Schema: manifestSchema, Run: d.id, Files: []manifestEntry{}, External: []manifestEntry{}}
	names := map[string]bool{manifestName: true}
	for _, o := range files {
		fh, err := os.OpenFile(filepath.Join(staging, o.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return failed(err)
		}
		s, err := finishWrite(fh, output{name: filepath.Join(d.name, o.name), write: o.write})
		if err != nil {
			return err
		}
		m.Files = append(m.Files, manifestEntry{Name: o.name, Bytes: s.size, SHA256: hex.EncodeToString(s.sum[:])})
		names[o.name] = true
	}
	for _, s := range ext {
		m.External = append(m.External, manifestEntry{Flag: flagName(s.flag), Bytes: s.size, SHA256: hex.EncodeToString(s.sum[:])})
	}
	if err := publishHook("staged"); err != nil {
		return failed(err)
	}
	previous := readPrevious(d.path)
	if err := d.checkPrevious(previous, true); err != nil {
		return err
	}
	if err := d.carryOver(staging, names, previous.names); err != nil {
		return err
	}
	if err := publishHook("carried"); err != nil {
		return failed(err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	fh, err := os.OpenFile(filepath.Join(staging, manifestName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return failed(err)
	}
	if _, err := finishWrite(fh, output{name: filepath.Join(d.name, manifestName), write: func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}}); err != nil {
		return err
	}
	syncDir(staging)
	if err := publishHook("manifest"); err != nil {
		return failed(err)
	}
	old, err := d.swap(staging)
	if err != nil {
		return err
	}
	published = true
	syncDir(parent)
	publishHook("published")
	if old != "" {
		d.rescue(old, names, previous.names)
		if err := os.RemoveAll(old); err != nil && d.warn != nil {
			fmt.Fprintf(d.warn, "xdssim: warning: the previous outputs of %s, moved to %s, could not be removed: %v\n", d.name, old, unwrapPath(err))
		}
		releaseTemp(old)
	}
	releaseTemp(staging)
	publishHook("removed")
	return nil
}

// swap puts the staging directory in d's place, and returns the directory
// that now holds the previous set ("" when d did not exist).
func (d *outDir) swap(staging string) (old string, err error) {
	failed := func(err error) error {
		return ioError{fmt.Errorf("writing %s: replacing the directory: %w", d.name, unwrapPath(err)), keptPrevious}
	}
	if _, err := os.Lstat(d.path); errors.Is(err, fs.ErrNotExist) {
		if err := publishHook("rename"); err != nil {
			return "", failed(err)
		}
		err := os.Rename(staging, d.path)
		if err == nil {
			return "", nil
		}
		if _, serr := os.Lstat(d.path); serr != nil {
			return "", failed(err)
		}
		// Another process made it meanwhile: exchange with it.
	}
	if err := publishHook("exchange"); err != nil {
		return "", failed(err)
	}
	err = exchange(staging, d.path)
	if err == nil {
		return staging, nil
	}
	if !errors.Is(err, errNoExchange) {
		return "", failed(err)
	}
	// The file system cannot exchange two names: the previous set goes
	// aside, then the new one takes its place. In between the directory
	// does not exist; if this process dies there, the parent (holdRestore)
	// or the next command writing there (recoverInterrupted) puts the
	// previous set back.
	parent, base := filepath.Split(d.path)
	old = filepath.Join(parent, "."+base+".xdssim-old-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	holdRestore(old, d.path)
	if err := os.Rename(d.path, old); err != nil {
		releaseTemp(old)
		return "", failed(err)
	}
	if err := publishHook("moved"); err != nil {
		os.Rename(old, d.path)
		releaseTemp(old)
		return "", failed(err)
	}
	if err := os.Rename(staging, d.path); err != nil {
		os.Rename(old, d.path)
		releaseTemp(old)
		return "", failed(err)
	}
	return old, nil
}

// errNoExchange is exchange's error on a system or file system that cannot
// exchange two names in one step.
var errNoExchange = errors.New("the file system cannot exchange two directories in one rename")

// exchange swaps the names of two directories in one step (exchangeDirs;
// tests replace it).
var exchange = exchangeDirs

// previousSet is the set an output directory holds.
type previousSet struct {
	// names are its files, those that are in the directory: those its
	// manifest names, or, without a manifest, those of setNames.
	names map[string]bool
	// run is the run its manifest names; nil without a manifest or for an
	// older xdssim's.
	run *runIdentity
}

// setNames are the names of the files of every set xdssim writes: a
// directory without a manifest that holds one of them holds the outputs
// of an older xdssim.
var setNames = []string{"report.html", "series.csv", "summary.json", "sweep.json", "sweep.csv", "sweep.html",
	"compare.json", "compare.html", "find.json"}

// readPrevious returns the set published in dir: the files its manifest
// names and the run that wrote it or, when dir holds no readable manifest,
// the files of setNames it holds.
func readPrevious(dir string) previousSet {
	p := previousSet{names: map[string]bool{}}
	present := func(n string) bool {
		_, err := os.Lstat(filepath.Join(dir, n))
		return err == nil
	}
	var m manifest
	b, err := readSmallFile(filepath.Join(dir, manifestName), 1<<20)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Schema != manifestSchema {
		for _, n := range setNames {
			if present(n) {
				p.names[n] = true
			}
		}
		return p
	}
	for _, f := range m.Files {
		if f.Name != "" && f.Name == filepath.Base(f.Name) && present(f.Name) {
			p.names[f.Name] = true
		}
	}
	if m.Run != nil && m.Run.ID != "" {
		p.run = m.Run
	}
	return p
}

// claim checks, before a run, that the directory holds no other run's
// set: none at all, or the set of the same run id, which the new set
// replaces, or another's when overwrite (--overwrite). The manifest of the
// set published names id.
func (d *outDir) claim(id runIdentity, overwrite bool) error {
	d.id, d.overwrite = &id, overwrite
	return d.checkPrevious(readPrevious(d.path), false)
}

// checkPrevious refuses to replace p, the set the directory holds, when
// it is another run's (see claim); late says the check is the one made
// again just before publishing, after the runs.
func (d *outDir) checkPrevious(p previousSet, late bool) error {
	if d.id == nil || d.overwrite || len(p.names) == 0 || (p.run != nil && p.run.ID == d.id.ID) {
		return nil
	}
	held := make([]string, 0, len(p.names))
	for n := range p.names {
		held = append(held, n)
	}
	slices.Sort(held)
	what := fmt.Sprintf("outputs of xdssim (%s) that do not say which run wrote them (an older xdssim's: no %s names the run)", strings.Join(held, ", "), manifestName)
	if p.run != nil {
		what = fmt.Sprintf("the outputs of another run, %s (scenario SHA-256 %s)", p.run.describe(), shortHashes(p.run.ScenarioSHA256))
	}
	when := "nothing was run"
	if late {
		when = "they were written there while this command ran, and its outputs were not written"
	}
	return badInput("%s: holds %s; this is %s (scenario SHA-256 %s), and %s. Write the outputs elsewhere with --out DIR, or replace those with --overwrite",
		refer(d.flag, d.name), what, d.id.describe(), shortHashes(d.id.ScenarioSHA256), when)
}

// shortHashes writes each hash by its first 12 hex digits, as a message
// names it: "3f2a91c0e1b4…".
func shortHashes(hs []string) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h[:min(12, len(h))] + "…"
	}
	return strings.Join(out, " and ")
}

// readSmallFile reads a regular file of at most limit bytes.
func readSmallFile(name string, limit int64) ([]byte, error) {
	fh, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return b, err
}

// carryOver links (or copies) into staging every file of d that is
// neither a file of the new set (names) nor one of the previous set
// (previous): those are the directory's own, kept across publications.
// The temporary file of another process writing there now (a shard) is
// linked too: it is the same file, and its rename then lands in the new
// directory.
func (d *outDir) carryOver(staging string, names, previous map[string]bool) error {
	ents, err := os.ReadDir(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ioError{fmt.Errorf("reading %s: %w", d.name, unwrapPath(err)), keptPrevious}
	}
	for _, e := range ents {
		n := e.Name()
		src, dst := filepath.Join(d.path, n), filepath.Join(staging, n)
		if names[n] || previous[n] || (isTempName(n) && staleFile(src)) {
			continue
		}
		var err error
		switch t := e.Type(); {
		case t.IsRegular():
			if err = os.Link(src, dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
				err = copyFile(src, dst)
			}
		case t&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(src); err == nil {
				err = os.Symlink(target, dst)
			}
		default:
			return badInput("%s: holds %s, %s: publishing the outputs replaces the directory whole, keeping only the files in it; give a directory of its own",
				refer(d.flag, d.name), n, scenarios.FileKind(t))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ioError{fmt.Errorf("writing %s: keeping %s: %w", d.name, n, unwrapPath(err)), keptPrevious}
		}
	}
	return nil
}

// rescue moves into d the files another process wrote into it while this
// one published (they went with the previous set, to old): those that are
// not of either set and are not in d now.
func (d *outDir) rescue(old string, names, previous map[string]bool) {
	ents, _ := os.ReadDir(old)
	for _, e := range ents {
		n := e.Name()
		if names[n] || previous[n] || isTempName(n) || !e.Type().IsRegular() {
			continue
		}
		os.Link(filepath.Join(old, n), filepath.Join(d.path, n)) // fails when it is there: nothing to do
	}
}

// staleFile reports whether the file at p is older than this process: a
// temporary file of a run killed before it started.
func staleFile(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.ModTime().Before(processStart)
}

// isTempName reports whether a file name is one of xdssim's temporary
// files: an output being written (.NAME.tmp-*) or a check's probe.
func isTempName(n string) bool {
	return strings.HasPrefix(n, ".") && (strings.Contains(n, ".tmp-") || strings.HasPrefix(n, ".xdssim-check-"))
}

// copyFile copies the regular file src to dst, which must not exist.
func copyFile(src, dst string) error {
	in, err := openRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// openRegular opens name for reading when it is a regular file, without
// waiting on a named pipe (O_NONBLOCK) and without reading a device.
func openRegular(name string) (*os.File, error) {
	fh, err := os.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("%s: is %s, expected a regular file", name, scenarios.FileKind(st.Mode()))
	}
	return fh, nil
}

// siblings returns the staging and previous-set directories beside path
// of the given kind ("new", "old"), with the pid of the process that made
// each.
func siblings(path, kind string) map[string]int {
	parent, base := filepath.Split(path)
	out := map[string]int{}
	matches, _ := filepath.Glob(filepath.Join(parent, "."+globEscape(base)+".xdssim-"+kind+"-*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), "."+base+".xdssim-"+kind+"-")
		digits, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if err != nil {
			continue
		}
		out[m] = pid
	}
	return out
}

// stale reports whether a staging directory at p, made by process pid, was
// left by a process that is gone: it is older than this process and its
// process is not running here, or it is over a day old (a process on
// another machine, sharing the directory).
func stale(p string, pid int) bool {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return false
	}
	age := st.ModTime()
	return age.Before(processStart) && (!processAlive(pid) || age.Before(processStart.Add(-24*time.Hour)))
}

// removeStaleSets removes the staging directories beside path that killed
// runs left: unpublished sets, and previous sets not yet removed.
func removeStaleSets(path string) {
	for _, kind := range []string{"new", "old", "check"} {
		for p, pid := range siblings(path, kind) {
			if kind == "check" {
				pid = -1 // a probe, removed at once: no process owns it
			}
			if stale(p, pid) {
				if _, err := os.Lstat(path); kind == "old" && err != nil {
					continue // recoverInterrupted puts it back
				}
				os.RemoveAll(p)
			}
		}
	}
}

// recoverInterrupted puts back the previous set of path when a run that
// published there was killed between the two renames of a file system
// that cannot exchange names, leaving no directory at path.
func recoverInterrupted(path string) {
	if _, err := os.Lstat(path); err == nil {
		return
	}
	var newest string
	var when time.Time
	for p, pid := range siblings(path, "old") {
		if st, err := os.Lstat(p); err == nil && stale(p, pid) && st.ModTime().After(when) {
			newest, when = p, st.ModTime()
		}
	}
	if newest != "" {
		os.Rename(newest, path)
	}
}
