package docs

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// privateCitations are citations of material a person who clones the
// project does not have: the maintainers' working notes and design file,
// kept beside the repository. Each source is cited instead: the real
// client's repository, file and function, a gRFC section, or a section of
// these docs.
var privateCitations = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a path out of the repository into the maintainers' shared folder", regexp.MustCompile(`\.\./shared\b`)},
	{"the maintainers' design file", regexp.MustCompile(`\bDESIGN\.md\b`)},
	{"a file of the maintainers' notes", regexp.MustCompile(`(?:^|[^\w-])(?P<cite>notes/[\w-]+\.md)`)},
	{"a section of the maintainers' notes", regexp.MustCompile(`(?i)\bnotes\s*§`)},
	{"a notes file by name", regexp.MustCompile(`\b(xdsclient-behavior|fidelity-audit|fidelity-source-check|landscape-and-incidents)\.md\b`)},
}

// repoRoot is the repository's top directory, the parent of docs/.
const repoRoot = ".."

// trackedFiles lists the repository's files, relative to repoRoot: git's
// index when git can read it, otherwise every file of the tree outside
// .git (a source archive has no index).
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z").Output()
	if err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	t.Logf("git ls-files: %v; walking the tree instead", err)
	var files []string
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestNoFileCitesThePrivateNotes: no tracked file (code, comments, tests,
// docs, scenarios, fuzz corpus) points at the maintainers' notes or design
// file; the project stands alone.
func TestNoFileCitesThePrivateNotes(t *testing.T) {
	files := trackedFiles(t)
	if len(files) == 0 {
		t.Fatal("no files found")
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range privateCitations {
			g := max(0, c.re.SubexpIndex("cite")) // the citation without its context
			for _, m := range c.re.FindAllSubmatchIndex(b, -1) {
				start, end := m[2*g], m[2*g+1]
				line := 1 + bytes.Count(b[:start], []byte("\n"))
				t.Errorf("%s:%d: %q cites %s; cite the real source or these docs instead",
					f, line, b[start:end], c.what)
			}
		}
	}
}

// TestPrivateCitationPatterns checks the patterns themselves: each catches
// its kind of citation, and none flags a legitimate one.
func TestPrivateCitationPatterns(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		// The citations are split so that this file does not cite.
		{"see .." + "/shared/notes for it", true},
		{"(DESIGN" + ".md, Determinism)", true},
		{"(notes/" + "xdsclient-" + "behavior.md §5)", true},
		{"`notes/" + "dependencies.md`", true},
		{"Reference: notes " + "§8.1", true},
		{"grpc-go (Notes " + "§6)", true},
		{"the fidelity-" + "audit.md appendix", true},
		{"RFC 6298 §2 (SYN retransmission)", false},
		{"Numerical Recipes, 3rd ed., §14.3.3", false},
		{"[docs/model-fidelity.md](docs/model-fidelity.md)", false},
		{"release-notes/v1.md", false},
		{"--out /shared/my-sweep", false},
		{"MeshNotes says what the simulator does not model", false},
	} {
		got := false
		for _, c := range privateCitations {
			got = got || c.re.MatchString(tt.text)
		}
		if got != tt.want {
			t.Errorf("%q: flagged %v, want %v", tt.text, got, tt.want)
		}
	}
}

// mdLink is a Markdown inline link or image: its target, up to the first
// space or closing parenthesis.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// urlScheme starts a link target that is a URL, not a path.
var urlScheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

// anchorDropped is what a heading loses in its anchor: all but letters,
// digits, '_', '-' and spaces.
var anchorDropped = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)

// headingAnchor is the anchor GitHub gives a Markdown heading: lower case,
// punctuation dropped, spaces as hyphens.
func headingAnchor(heading string) string {
	h := strings.ToLower(strings.TrimSpace(heading))
	return strings.ReplaceAll(anchorDropped.ReplaceAllString(h, ""), " ", "-")
}

// anchors lists the heading anchors of a Markdown document.
func anchors(doc []byte) map[string]bool {
	a := map[string]bool{}
	fence := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		a[headingAnchor(strings.TrimLeft(line, "#"))] = true
	}
	return a
}

// TestRelativeMarkdownLinksResolve: every relative link of the project's
// Markdown names a file that exists and, with a #fragment into Markdown, a
// heading of that file.
func TestRelativeMarkdownLinksResolve(t *testing.T) {
	docs := map[string][]byte{}
	read := func(f string) ([]byte, error) {
		if b, ok := docs[f]; ok {
			return b, nil
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err == nil {
			docs[f] = b
		}
		return b, err
	}
	n := 0
	for _, f := range trackedFiles(t) {
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		b, err := read(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if urlScheme.MatchString(target) {
					continue // a URL
				}
				n++
				file, frag, _ := strings.Cut(target, "#")
				dest := f
				if file != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(f), file))
				}
				db, err := read(dest)
				if err != nil {
					if _, serr := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dest))); serr == nil {
						continue // a directory
					}
					t.Errorf("%s:%d: link %s: no file %s", f, i+1, target, dest)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(db)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", f, i+1, target, dest, frag)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no relative links found: the link pattern is broken")
	}
}

// TestHeadingAnchorsAreGitHubs pins headingAnchor on headings of these docs.
func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	for _, tt := range []struct{ heading, want string }{
		{"Reading choices and known gaps", "reading-choices-and-known-gaps"},
		{"Behaviour × profile", "behaviour--profile"},
		{"Checked against grpc-go (`validate/`)", "checked-against-grpc-go-validate"},
		{"`[[fleet.group]]` — client groups", "fleetgroup--client-groups"},
		{"The A78 metrics in Prometheus and Grafana", "the-a78-metrics-in-prometheus-and-grafana"},
	} {
		if got := headingAnchor(tt.heading); got != tt.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}
