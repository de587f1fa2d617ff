package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installTestHooks lets a test make the xdssim it runs (runBinary) die or
// fail at a step of publishing its outputs: XDSSIM_TEST_PUBLISH=kill:STEP
// (SIGKILL, as the out-of-memory killer does), crash:STEP (a fatal error
// of the runtime) or fail:STEP (the step's rename refused).
// XDSSIM_TEST_NO_EXCHANGE=1 makes the file system one that cannot
// exchange two names. Only the supervised child publishes.
func installTestHooks() {
	if os.Getenv("XDSSIM_TEST_NO_EXCHANGE") != "" {
		exchange = func(a, b string) error { return errNoExchange }
	}
	what, step, ok := strings.Cut(os.Getenv("XDSSIM_TEST_PUBLISH"), ":")
	if !ok || os.Getenv(supervisedEnv) == "" {
		return
	}
	publishHook = func(s string) error {
		if s != step {
			return nil
		}
		switch what {
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case "crash":
			done := make(chan bool)
			go func() { panic("a fatal error while publishing") }()
			<-done
		}
		return &os.LinkError{Op: "rename", Old: "staging", New: "out", Err: syscall.EPERM}
	}
}

// snapshot returns every file of dir (names and contents), and the names
// of xdssim's temporaries beside it or in it.
func snapshot(t *testing.T, dir string) (files map[string]string, temps []string) {
	t.Helper()
	files = map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
		if isTempName(e.Name()) {
			temps = append(temps, e.Name())
		}
	}
	beside, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".*"))
	for _, b := range beside {
		temps = append(temps, filepath.Base(b))
	}
	return files, temps
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func fileNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPublishingIsAllOrNothing kills xdssim run (SIGKILL, a crash of the
// runtime) or fails its rename at every step of publishing its outputs,
// over a directory that holds the outputs of another seed, a file of the
// user's and a metrics file only the previous run wrote (--overwrite: it
// is another run's). Every time the directory holds the whole previous set or the whole new one, with the
// user's file, and no temporary is left: before the set is published
// it is the previous one, after it the new one. It does so with a file
// system that exchanges two names in one rename and with one that cannot
// (two renames: the parent puts the previous set back when the child dies
// between them).
func TestPublishingIsAllOrNothing(t *testing.T) {
	scenario := tinyScenario(t)
	run := func(dir string, env []string, args ...string) (int, string) {
		return runBinary(t, env, append([]string{"run", scenario, "--quiet", "--out", dir}, args...)...)
	}
	base := t.TempDir()
	prev, next := filepath.Join(base, "prev"), filepath.Join(base, "next")
	if code, stderr := run(prev, nil, "--seed", "1", "--metrics", filepath.Join(prev, "metrics.om")); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(prev, "notes.txt"), []byte("the user's"), 0o644)
	if code, stderr := run(next, nil, "--seed", "2"); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(next, "notes.txt"), []byte("the user's"), 0o644)
	old, _ := snapshot(t, prev)
	young, _ := snapshot(t, next)
	if sameFiles(old, young) || old["metrics.om"] == "" || young["metrics.om"] != "" {
		t.Fatalf("the two sets do not differ as they should: %v and %v", fileNames(old), fileNames(young))
	}
	steps := map[bool][]string{
		true:  {"staged", "carried", "manifest", "exchange", "published", "removed"},
		false: {"staged", "carried", "manifest", "exchange", "moved", "published", "removed"},
	}
	for _, canExchange := range []bool{true, false} {
		for _, step := range steps[canExchange] {
			for _, what := range []string{"kill", "crash", "fail"} {
				name := fmt.Sprintf("%s at %s, exchange %v", what, step, canExchange)
				if what != "kill" && (step == "published" || step == "removed") {
					continue // a failure there is not returned: the set is out
				}
				t.Run(name, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "out")
					os.Mkdir(dir, 0o755)
					for n, b := range old {
						os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644)
					}
					env := []string{"XDSSIM_TEST_PUBLISH=" + what + ":" + step}
					if !canExchange {
						env = append(env, "XDSSIM_TEST_NO_EXCHANGE=1")
					}
					code, stderr := run(dir, env, "--seed", "2", "--overwrite")
					if code != exitInternal {
						t.Errorf("exit %d, want 1:\n%s", code, stderr)
					}
					got, temps := snapshot(t, dir)
					wantNew := step == "published" || step == "removed"
					switch {
					case sameFiles(got, old) && !wantNew:
					case sameFiles(got, young) && wantNew:
					default:
						t.Errorf("the directory holds %v, want the whole %s set\n%s", fileNames(got), map[bool]string{true: "new", false: "previous"}[wantNew], stderr)
					}
					if len(temps) > 0 {
						t.Errorf("temporaries left: %v", temps)
					}
					if what == "fail" && !strings.Contains(stderr, keptPrevious) {
						t.Errorf("stderr does not say the previous outputs are kept:\n%s", stderr)
					}
				})
			}
		}
	}
}

// TestAKilledPublicationIsPutBackByTheNextRun: when the parent died too
// (kill -9 of both) between the two renames of a file system that cannot
// exchange names, the previous set waits beside the directory; the next
// command to write there puts it back before anything else.
func TestAKilledPublicationIsPutBackByTheNextRun(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	old := filepath.Join(parent, fmt.Sprintf(".out.xdssim-old-%d-x", gone.Process.Pid))
	os.Mkdir(old, 0o755)
	os.WriteFile(filepath.Join(old, "summary.json"), []byte("previous"), 0o644)
	long := processStart.Add(-time.Minute)
	os.Chtimes(old, long, long)
	if _, err := checkOutDir("out", dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.json")); string(b) != "previous" {
		t.Errorf("the previous set was not put back: summary.json = %q", b)
	}
}

// TestPublishingKeepsTheDirectorysOwnFilesAndDropsThePreviousSet: a set
// replaces the previous set whole (a metrics file only the previous run
// wrote goes with it), and keeps the other files of the directory (a
// shard, a note, a symlink).
func TestPublishingKeepsTheDirectorysOwnFilesAndDropsThePreviousSet(t *testing.T) {
	dir := t.TempDir()
	scenario := tinyScenario(t)
	if code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", dir, "--metrics", filepath.Join(dir, "metrics.om")); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	os.Symlink("notes.txt", filepath.Join(dir, "link"))
	if code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", dir, "--seed", "2", "--overwrite"); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	files, temps := snapshot(t, dir)
	if got, want := strings.Join(fileNames(files), " "), ".xdssim-set.json link notes.txt report.html series.csv summary.json"; got != want {
		t.Errorf("the directory holds %s, want %s", got, want)
	}
	if l, err := os.Readlink(filepath.Join(dir, "link")); err != nil || l != "notes.txt" {
		t.Errorf("the symlink became %q, %v", l, err)
	}
	if len(temps) > 0 {
		t.Errorf("temporaries left: %v", temps)
	}
	var m manifest
	if err := json.Unmarshal([]byte(files[manifestName]), &m); err != nil || len(m.Files) != 3 || m.Files[2].Name != "summary.json" ||
		m.Files[2].Bytes != int64(len(files["summary.json"])) {
		t.Errorf("manifest: %+v, %v", m, err)
	}
}

// TestMetricsOutsideTheDirectoryAreNamedByTheManifest: --metrics in
// another directory is written once the set is published, and the
// manifest names its SHA-256, so that a reader can tell it is this run's.
func TestMetricsOutsideTheDirectoryAreNamedByTheManifest(t *testing.T) {
	dir, metrics := t.TempDir(), filepath.Join(t.TempDir(), "m.om")
	if code, _, stderr := runMain(t, "run", tinyScenario(t), "--quiet", "--out", dir, "--metrics", metrics); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, manifestName))
	var m manifest
	json.Unmarshal(b, &m)
	om, _ := os.ReadFile(metrics)
	if len(m.External) != 1 || m.External[0].Flag != "--metrics" || m.External[0].Bytes != int64(len(om)) || len(om) == 0 {
		t.Errorf("manifest %s, metrics %d bytes", b, len(om))
	}
}

func TestAFailedWriteLeavesThePreviousOutputs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "report.html"), filepath.Join(dir, "summary.json")
	os.WriteFile(a, []byte("old report"), 0o644)
	os.WriteFile(b, []byte("old summary"), 0o644)
	d, err := checkOutDir("out", dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, failing := range []func(io.Writer) error{
		func(w io.Writer) error { io.WriteString(w, "half a summ"); return errors.New("disk full") },
		func(w io.Writer) error { io.WriteString(w, "half a summ"); panic("the renderer's bug") },
	} {
		func() {
			defer func() { recover() }()
			err = d.publish([]output{
				{name: "report.html", write: writeBytes([]byte("new report"))},
				{name: "summary.json", write: failing},
			}, nil)
		}()
		if err == nil {
			t.Fatal("publish succeeded with a failing writer")
		}
		for name, want := range map[string]string{a: "old report", b: "old summary"} {
			if got, _ := os.ReadFile(name); string(got) != want {
				t.Errorf("%s = %q, want the previous %q", filepath.Base(name), got, want)
			}
		}
		if _, temps := snapshot(t, dir); len(temps) > 0 {
			t.Errorf("temporaries left: %v", temps)
		}
	}
}

func TestTemporaryFilesAKilledRunLeftAreRemoved(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.Mkdir(dir, 0o755)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	stale := filepath.Join(dir, ".shard-0000-of-0002.json.tmp-123")
	fresh := filepath.Join(dir, ".shard-0000-of-0002.json.tmp-456")
	staleSet := filepath.Join(parent, fmt.Sprintf(".out.xdssim-new-%d-1", gone.Process.Pid))
	liveSet := filepath.Join(parent, fmt.Sprintf(".out.xdssim-new-%d-2", os.Getpid()))
	for _, f := range []string{stale, fresh} {
		os.WriteFile(f, []byte("half"), 0o644)
	}
	for _, d := range []string{staleSet, liveSet} {
		os.Mkdir(d, 0o755)
	}
	long := processStart.Add(-time.Hour)
	for _, f := range []string{stale, staleSet, liveSet} {
		os.Chtimes(f, long, long)
	}
	os.Chtimes(fresh, processStart.Add(time.Second), processStart.Add(time.Second)) // a run still writing
	if err := writeFile("", filepath.Join(dir, "shard-0000-of-0002.json"), writeBytes([]byte("{}"))); err != nil {
		t.Fatal(err)
	}
	d, err := checkOutDir("out", dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.publish([]output{{name: "sweep.json", write: writeBytes([]byte("{}"))}}, nil); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{stale: false, fresh: true, staleSet: false, liveSet: true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(f), err == nil, want)
		}
	}
}

// TestACrashLeavesNoTemporaryFiles: a fatal error of the runtime while
// the outputs are written (out of memory while rendering) cannot run the
// child's own clean-up; the supervising parent removes what the child
// held.
func TestACrashLeavesNoTemporaryFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cpu := filepath.Join(t.TempDir(), "cpu.prof")
	code, stderr := runBinary(t, []string{"XDSSIM_TEST_PUBLISH=crash:staged"}, "run", tinyScenario(t), "--quiet", "--out", dir, "--cpuprofile", cpu)
	if code != exitInternal || !strings.Contains(stderr, "a fatal error while publishing") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	for _, d := range []string{dir, filepath.Dir(cpu)} {
		if _, temps := snapshot(t, d); len(temps) > 0 {
			t.Errorf("temporaries left in %s: %v", d, temps)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(cpu)); len(ents) != 1 {
		t.Errorf("the CPU profile's directory holds %d files, want the profile", len(ents))
	}
}

// TestOutputsReplaceOnlyFilesAndSymlinks: an output path that is a
// device, a named pipe or a socket (or a symlink to one, as /dev/stdout
// is) is refused before the run, whoever runs xdssim: root could rename
// over it and leave a regular file where /dev/null was.
func TestOutputsReplaceOnlyFilesAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip("no unix sockets here:", err)
	}
	defer l.Close()
	link := filepath.Join(dir, "stdout")
	os.Symlink(fifo, link)
	tests := []struct {
		name, path, kind string
		args             []string
	}{
		{"--metrics a named pipe", fifo, "a named pipe (FIFO)", []string{"run", "--metrics", fifo}},
		{"--memprofile a socket", sock, "a socket", []string{"run", "--memprofile", sock}},
		{"--cpuprofile a symlink to a named pipe", link, "a symlink to a named pipe (FIFO)", []string{"run", "--cpuprofile", link}},
		{"trace --perfetto a named pipe", fifo, "a named pipe (FIFO)", []string{"trace", "--client", "group-0/0", "--perfetto", fifo}},
		{"shrink --out a socket", sock, "a socket", []string{"shrink", "--out", sock, "--set", `expect=[{metric="fleet.starts",max=0}]`}},
	}
	if os.Geteuid() == 0 {
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			tests = append(tests, struct {
				name, path, kind string
				args             []string
			}{"--metrics a device, as root", null, "a device", []string{"run", "--metrics", null}})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.Lstat(tt.path)
			args := append(append([]string{}, tt.args...), tinyScenario(t))
			if tt.args[0] == "run" {
				args = append(args, "--out", filepath.Join(t.TempDir(), "o"))
			}
			code, _, stderr := runMain(t, args...)
			if code != exitInput || !strings.Contains(stderr, tt.path+": is "+tt.kind) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.path+": is "+tt.kind)
			}
			if strings.Contains(stderr, "seed ") {
				t.Errorf("the run started before the path was checked:\n%s", stderr)
			}
			after, err := os.Lstat(tt.path)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s was replaced: %v, %v", tt.path, after, err)
			}
		})
	}
}

// TestNoOutputIsWrittenInDev: the reproducers of issue 27, --metrics
// /dev/null and /dev/full and --memprofile /dev/stdout, which root used to
// replace with regular files, are refused by their path (checked directly:
// the test must not risk the machine's /dev).
func TestNoOutputIsWrittenInDev(t *testing.T) {
	for _, tt := range []struct{ flag, name string }{{"metrics", "/dev/null"}, {"metrics", "/dev/full"}, {"memprofile", "/dev/stdout"}, {"perfetto", "/proc/self/fd/1"}} {
		err := checkOutputFile(tt.flag, tt.name)
		var in inputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), "--"+tt.flag+" "+tt.name+": is in /") {
			t.Errorf("--%s %s: %v, want bad input", tt.flag, tt.name, err)
		}
	}
}

// TestTwoOutputsThatAreOneFileAreRefused: two outputs of one command at
// the same path (through a symlinked directory too) would silently lose
// one: refused before the run, naming both.
func TestTwoOutputsThatAreOneFileAreRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	os.Symlink(out, filepath.Join(dir, "alias"))
	prof := filepath.Join(dir, "p.prof")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--metrics is summary.json", []string{"--metrics", filepath.Join(out, "summary.json")},
			filepath.Join(out, "summary.json") + " and --metrics " + filepath.Join(out, "summary.json") + " are the same file"},
		{"--metrics is report.html through a symlink", []string{"--metrics", filepath.Join(dir, "alias", "report.html")}, "are the same file"},
		{"--cpuprofile and --memprofile", []string{"--cpuprofile", prof, "--memprofile", prof}, "--memprofile " + prof + " and --cpuprofile " + prof + " are the same file"},
		{"--metrics and --memprofile", []string{"--metrics", prof, "--memprofile", prof}, "are the same file"},
		{"--metrics is the manifest", []string{"--metrics", filepath.Join(out, manifestName)}, "are the same file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, append([]string{"run", tinyScenario(t), "--out", out}, tt.args...)...)
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestAnOutputDirectoryMustBeOneToReplace: the directory is replaced
// whole when its outputs are published, so one that holds a directory or
// a pipe, or is the current directory, is refused before the run.
func TestAnOutputDirectoryMustBeOneToReplace(t *testing.T) {
	dir := t.TempDir()
	withSub := filepath.Join(dir, "with-sub")
	os.MkdirAll(filepath.Join(withSub, "sub"), 0o755)
	withFifo := filepath.Join(dir, "with-fifo")
	os.Mkdir(withFifo, 0o755)
	syscall.Mkfifo(filepath.Join(withFifo, "p"), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	wd, _ := os.Getwd()
	tests := []struct {
		name, out, want string
	}{
		{"a directory in it", withSub, "--out " + withSub + ": holds sub, a directory: publishing the outputs replaces the directory whole"},
		{"a named pipe in it", withFifo, "holds p, a named pipe (FIFO)"},
		{"a file", file, "--out " + file + ": is a file, expected a directory"},
		{"the current directory", ".", "--out .: is the current directory, or holds it"},
		{"a directory holding the current one", filepath.Dir(wd), "is the current directory, or holds it"},
		{"the root", "/", "--out /: is the root directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, "run", tinyScenario(t), "--out", tt.out)
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestSIGQUITGivesTheGoroutineDumpAndExit131: a user's SIGQUIT (Ctrl-\)
// asks Go's runtime for its goroutine dump; it is not a crash of xdssim
// and exits 131 as a shell reports a death by SIGQUIT.
func TestSIGQUITGivesTheGoroutineDumpAndExit131(t *testing.T) {
	cmd := exec.Command(os.Args[0], "run", "reconnect-storm", "--out", t.TempDir(), "--quiet")
	cmd.Env = append(os.Environ(), "XDSSIM_TEST_MAIN=1")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the child to start its run before asking for the dump.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "seed") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGQUIT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGQUIT) {
		t.Errorf("exit %v, want %d", err, 128+int(syscall.SIGQUIT))
	}
	if !strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "this is a bug") {
		t.Errorf("stderr has no goroutine dump, or calls it a bug:\n%.2000s", stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer that a test may read while a process
// writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestARenameTheFileSystemRefusesKeepsThePreviousSet: issue 27's
// reproducer with a real refusal, an immutable output directory (chattr
// +i, as root): run exits 1 saying the previous outputs are kept, and
// they are, whole.
func TestARenameTheFileSystemRefusesKeepsThePreviousSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	scenario := tinyScenario(t)
	if code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", dir, "--seed", "1"); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	before, _ := snapshot(t, dir)
	if err := exec.Command("chattr", "+i", dir).Run(); err != nil {
		t.Skip("cannot make a directory immutable here (chattr +i needs root and a file system that has it):", err)
	}
	defer exec.Command("chattr", "-i", dir).Run()
	code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", dir, "--seed", "2", "--overwrite")
	if code != exitInternal || !strings.Contains(stderr, "replacing the directory: operation not permitted") || !strings.Contains(stderr, keptPrevious) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	after, temps := snapshot(t, dir)
	if !sameFiles(before, after) || len(temps) > 0 {
		t.Errorf("the directory holds %v (temporaries %v), want the previous set %v", fileNames(after), temps, fileNames(before))
	}
}

// TestAnImmutableOutputFileDoesNotStopTheNewSet: with report.html itself
// immutable (issue 27's other reproducer), the new set is published
// whole; the previous one, which cannot be removed, is left beside the
// directory with a warning.
func TestAnImmutableOutputFileDoesNotStopTheNewSet(t *testing.T) {
	parent := t.TempDir()
	dir, want := filepath.Join(parent, "out"), filepath.Join(parent, "want")
	scenario := tinyScenario(t)
	for _, d := range []struct{ dir, seed string }{{dir, "1"}, {want, "2"}} {
		if code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", d.dir, "--seed", d.seed); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
	}
	report := filepath.Join(dir, "report.html")
	if err := exec.Command("chattr", "+i", report).Run(); err != nil {
		t.Skip("cannot make a file immutable here:", err)
	}
	code, _, stderr := runMain(t, "run", scenario, "--quiet", "--out", dir, "--seed", "2", "--overwrite")
	left, _ := filepath.Glob(filepath.Join(parent, ".out.xdssim-new-*"))
	for _, l := range left {
		exec.Command("chattr", "-i", filepath.Join(l, "report.html")).Run()
		os.RemoveAll(l)
	}
	exec.Command("chattr", "-i", report).Run()
	got, _ := snapshot(t, dir)
	new, _ := snapshot(t, want)
	if code != exitOK || !sameFiles(got, new) || len(left) != 1 || !strings.Contains(stderr, "could not be removed: operation not permitted") {
		t.Errorf("exit %d, the directory holds the new set: %v, left %v, stderr:\n%s", code, sameFiles(got, new), left, stderr)
	}
}
