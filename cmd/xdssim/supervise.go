package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
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

// supervisedEnv marks the child process; its value is the file descriptor
// of the crash pipe.
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
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), supervisedEnv+"=3")
	cmd.SysProcAttr = childAttr()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		pr.Close()
		pw.Close()
		return 0, false
	}
	pw.Close()
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
	return childExit(werr, out, forwarded, os.Stderr), true
}

// childExit is the exit code of a supervised child that ended with err
// (from Wait), having written crash to its crash pipe; forwarded is the
// last signal the parent passed on to it.
func childExit(err error, crash []byte, forwarded os.Signal, stderr io.Writer) int {
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
