package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandAnswersHelpWithItsUsage: `xdssim CMD --help` (and -h,
// and `xdssim help CMD`) prints the command's own usage, with every flag
// it takes, and exits 0, without running anything.
func TestEveryCommandAnswersHelpWithItsUsage(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, c.name, "--help")
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: xdssim "+c.name) {
				t.Errorf("usage does not begin with its synopsis:\n%s", stdout)
			}
			for _, f := range c.flags {
				if !strings.Contains(stdout, f.spelled()+" ") {
					t.Errorf("usage lacks %s:\n%s", f.spelled(), stdout)
				}
			}
			for _, alt := range [][]string{{c.name, "-h"}, {"help", c.name}, {c.name, "default", "-help"}} {
				if code, out, _ := runMain(t, alt...); code != exitOK || out != stdout {
					t.Errorf("xdssim %s: exit %d, printed another text", strings.Join(alt, " "), code)
				}
			}
		})
	}
	code, stdout, _ := runMain(t, "help")
	for _, name := range commandNames() {
		if !strings.Contains(stdout, "xdssim "+name) {
			t.Errorf("xdssim help does not list %s", name)
		}
	}
	if code != exitOK {
		t.Errorf("xdssim help: exit %d", code)
	}
	if code, _, stderr := runMain(t, "help", "frobnicate"); code != exitInput || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d, %s", code, stderr)
	}
}

// TestEveryDocumentedFlagIsAccepted: each flag a command's usage lists,
// the command parses (a flag it did not would fail as "not defined" before
// the unknown one after it).
func TestEveryDocumentedFlagIsAccepted(t *testing.T) {
	for _, c := range commands() {
		for _, f := range c.flags {
			args := []string{c.name, "--" + f.name}
			if f.arg != "" {
				args = append(args, "x")
			}
			args = append(args, "--no-such-flag")
			_, _, stderr := runMain(t, args...)
			if !strings.Contains(stderr, "flag provided but not defined: -no-such-flag") {
				t.Errorf("xdssim %s: %s", strings.Join(args, " "), stderr)
			}
		}
	}
}

// TestBashCompletionCompletesCommandsFlagsAndScenarios drives the bash
// script as bash's programmable completion does: the words so far in
// COMP_WORDS, the completion function, the candidates in COMPREPLY.
func TestBashCompletionCompletesCommandsFlagsAndScenarios(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	_, script, _ := runMain(t, "completion", "bash")
	if err := os.WriteFile(filepath.Join(dir, "xdssim.bash"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// The script asks `xdssim list` for the library; a stand-in answers.
	fake := "#!/bin/sh\nprintf 'default  the demo\\nbad-cds-rollout  a NACK\\n'\n"
	if err := os.WriteFile(filepath.Join(dir, "xdssim"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		words string
		want  []string
	}{
		{"xdssim tr", []string{"trace"}},
		{"xdssim trace --cl", []string{"--client"}},
		{"xdssim run --me", []string{"--metrics", "--metrics-start", "--memprofile"}},
		{"xdssim run de", []string{"default"}},
		{"xdssim csds --at 1m bad", []string{"bad-cds-rollout"}},
		{"xdssim completion z", []string{"zsh"}},
		{"xdssim help sh", []string{"shrink"}},
	}
	for _, tt := range tests {
		cmd := exec.Command(bash, "-c", `source xdssim.bash; COMP_WORDS=(`+tt.words+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _xdssim; printf '%s\n' "${COMPREPLY[@]}"`)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.words, err, out)
		}
		got := strings.Fields(string(out))
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q completes to %v, want %v", tt.words, got, tt.want)
		}
	}
}

// TestZshCompletionIsAScriptZshReads checks the zsh script's syntax with
// zsh itself, and that it knows every command and flag.
func TestZshCompletionIsAScriptZshReads(t *testing.T) {
	code, script, _ := runMain(t, "completion", "zsh")
	if code != exitOK || !strings.HasPrefix(script, "#compdef xdssim\n") {
		t.Fatalf("exit %d:\n%s", code, script)
	}
	for _, c := range commands() {
		if !strings.Contains(script, "        "+c.name+")\n") {
			t.Errorf("no case for %s", c.name)
		}
		for _, f := range c.flags {
			if !strings.Contains(script, "--"+f.name+"[") {
				t.Errorf("%s: no spec for --%s", c.name, f.name)
			}
		}
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh to check the syntax with")
	}
	f := filepath.Join(t.TempDir(), "_xdssim")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zsh, "-n", f).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
}
