package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
)

// A fatal error of the Go runtime (out of memory, a stack overflow) cannot
// be recovered, and the runtime exits with code 2, the code of bad input.
// So xdssim runs itself as a child process and watches it: the child
// writes any fatal error to a pipe as well as to stderr
// (debug.SetCrashOutput), and when that pipe has something, or the child
// was killed (the kernel's out-of-memory killer), the parent exits 1, the
// code of an internal error. The child shares stdin, stdout and stderr,
// and receives the signals the parent gets.
//
// The child also tells the parent, on a second pipe, of every temporary
// file and staging directory it holds while writing outputs (holdTemp),
// and of each one it is done with (releaseTemp). When the child dies
// without releasing one (a crash, a kill), the parent removes it, or puts
// back a previous set of outputs the child had moved aside (holdRestore):
// a crash leaves no temporary file.

// supervisedEnv marks the child process; its value is the file descriptor
// of the crash pipe. The temporaries' pipe is the next one.
const supervisedEnv = "XDSSIM_SUPERVISED"

// supervise runs xdssim args in a supervised child and returns its exit
// code; ok is false when this process should run the command itself: it
// is the child, or the child cannot be started.
func supervise(args []string) (code int, ok bool) {
	if os.Getenv(supervisedEnv) != "" {
		os.Unsetenv(supervisedEnv)
		// The parent passes the crash pipe as the first extra file.
		if err := debug.SetCrashOutput(os.NewFile(3, "crash"), debug.CrashOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "xdssim: warning: fatal errors will exit 2: %v\n", err)
		}
		tempLog = os.NewFile(4, "temporaries")
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	tr, tw, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return 0, false
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw, tw}
	cmd.Env = append(os.Environ(), supervisedEnv+"=3")
	cmd.SysProcAttr = childAttr()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		for _, f := range []*os.File{pr, pw, tr, tw} {
			f.Close()
		}
		return 0, false
	}
	pw.Close()
	tw.Close()
	temps := make(chan map[string][]string)
	go func() { temps <- readTemps(tr) }()
	crash := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, io.LimitReader(pr, 1<<16))
		io.Copy(io.Discard, pr)
		crash <- b.Bytes()
	}()
	var forwarded os.Signal
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
wait:
	for {
		select {
		case s := <-sigs:
			forwarded = s
			cmd.Process.Signal(s)
		case werr = <-done:
			break wait
		}
	}
	signal.Stop(sigs)
	select { // a signal that came with the child's end
	case s := <-sigs:
		forwarded = s
	default:
	}
	out := <-crash
	cleanTemps(<-temps)
	return childExit(werr, out, forwarded, os.Stderr), true
}

// childExit is the exit code of a supervised child that ended with err
// (from Wait), having written crash to its crash pipe; forwarded is the
// last signal the parent passed on to it.
func childExit(err error, crash []byte, forwarded os.Signal, stderr io.Writer) int {
	if forwarded == quitSignal || bytes.HasPrefix(bytes.TrimSpace(crash), []byte("SIGQUIT")) {
		// The user asked for the goroutine dump (Ctrl-\ or kill -QUIT),
		// which the runtime printed on stderr: not a crash, and the
		// shell's code of a death by SIGQUIT.
		return 128 + int(syscall.SIGQUIT)
	}
	if len(crash) > 0 {
		fmt.Fprintf(stderr, "xdssim: internal error: xdssim crashed: %s\n%s\n", firstLine(crash), reportRequest)
		return exitInternal
	}
	if err == nil {
		return exitOK
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		fmt.Fprintf(stderr, "xdssim: internal error: %v\n%s\n", err, reportRequest)
		return exitInternal
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if forwarded != nil || ws.Signal() != syscall.SIGKILL {
			// The user interrupted it (Ctrl-C reaches both processes):
			// the shell's convention.
			return 128 + int(ws.Signal())
		}
		fmt.Fprintf(stderr, "xdssim: internal error: killed by signal %v (the kernel's out-of-memory killer does this; 'xdssim validate' prints the run's memory estimate)\n%s\n",
			ws.Signal(), reportRequest)
		return exitInternal
	}
	return ee.ExitCode()
}

// firstLine returns the line of a crash report that says what happened:
// "fatal error: ..." or "panic: ...".
func firstLine(b []byte) string {
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if bytes.HasPrefix(l, []byte("fatal error:")) || bytes.HasPrefix(l, []byte("panic:")) {
			return string(l)
		}
	}
	return "a fatal error of the Go runtime, reported above"
}

// tempLog is, in a supervised child, the pipe on which it tells the parent
// of its temporaries; nil otherwise.
var (
	tempLog io.Writer
	tempMu  sync.Mutex
)

// tellParent writes one line, a JSON array of strings, to tempLog.
func tellParent(words ...string) {
	tempMu.Lock()
	defer tempMu.Unlock()
	if tempLog == nil {
		return
	}
	b, _ := json.Marshal(words)
	tempLog.Write(append(b, '\n'))
}

// holdTemp tells the parent that this process holds the temporary file or
// directory path: remove it if this process dies first.
func holdTemp(path string) { tellParent("remove", absPath(path)) }

// holdRestore tells the parent that the previous outputs of the directory
// dir are at old, moved aside: put them back if this process dies before
// dir is there again, else remove them.
func holdRestore(old, dir string) { tellParent("restore", absPath(old), absPath(dir)) }

// releaseTemp tells the parent that path needs nothing more.
func releaseTemp(path string) { tellParent("release", absPath(path)) }

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// readTemps reads a child's tellParent lines until it exits and returns
// what it still held: each path with its line.
func readTemps(r io.ReadCloser) map[string][]string {
	defer r.Close()
	held := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var words []string
		if json.Unmarshal(sc.Bytes(), &words) != nil || len(words) < 2 {
			continue
		}
		switch words[0] {
		case "remove", "restore":
			held[words[1]] = words
		case "release":
			delete(held, words[1])
		}
	}
	io.Copy(io.Discard, r)
	return held
}

// cleanTemps removes what a child held when it ended, and puts back a set
// of outputs it had moved aside. Only xdssim's own temporaries are
// touched: names with ".tmp-" or ".xdssim-".
func cleanTemps(held map[string][]string) {
	for path, words := range held {
		base := filepath.Base(path)
		if !strings.Contains(base, ".tmp-") && !strings.Contains(base, ".xdssim-") {
			continue
		}
		if words[0] == "restore" && len(words) == 3 {
			if _, err := os.Lstat(words[2]); err != nil {
				os.Rename(path, words[2])
				continue
			}
		}
		os.RemoveAll(path)
	}
}
