package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/xdssim/xdssim/scenarios/internal/tomlpos"
)

//go:embed library/*.toml library/mesh
var library embed.FS

// DefaultName is the library scenario `xdssim run` uses with no argument.
const DefaultName = "default"

// Source is a scenario document and where it came from.
type Source struct {
	// File names the document in error messages: a path, or
	// "library/NAME.toml" for a library scenario.
	File string
	// Name is the scenario's name when the document gives none: the file's
	// base name without ".toml".
	Name string
	Data []byte
	// embedded: the scenario is the library's; the files it names are
	// the library's too.
	embedded bool

	// mu guards doc, the document decoded once: a sweep parses its
	// scenario once per point and per run, with other overrides.
	mu  sync.Mutex
	doc *decoded
}

// decoded is a document decoded: its tree, which Parse copies before it
// applies overrides, and where each of its keys stands; or why it is not a
// TOML document.
type decoded struct {
	text  string
	tree  map[string]any
	index *tomlpos.Index
	errs  ErrorList
}

// decode decodes the source's document, or returns the one decoded
// already if Data is unchanged.
func (src *Source) decode() *decoded {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.doc != nil && src.doc.text == string(src.Data) {
		return src.doc
	}
	d := &decoded{text: string(src.Data)}
	src.doc = d
	if pos, ok := checkNesting(d.text); !ok {
		d.errs = ErrorList{{File: src.File, Pos: pos,
			Msg: fmt.Sprintf("malformed TOML: arrays and inline tables nested more than %d deep", maxNesting)}}
		return d
	}
	if _, err := toml.Decode(d.text, &d.tree); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			d.errs = ErrorList{{File: src.File, Pos: tomlpos.Position{Line: pe.Position.Line, Col: pe.Position.Col},
				Msg: "malformed TOML: " + pe.Message + bareDurationHint(d.text, pe.Position.Line)}}
		} else {
			d.errs = ErrorList{{File: src.File, Msg: "malformed TOML: " + err.Error()}}
		}
		return d
	}
	d.index = tomlpos.Locate(d.text)
	return d
}

// copyTree copies a decoded TOML value deeply: its tables and arrays (the
// rest are values).
func copyTree(x any) any {
	switch v := x.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = copyTree(e)
		}
		return m
	case []map[string]any:
		out := make([]map[string]any, len(v))
		for i, e := range v {
			out[i] = copyTree(e).(map[string]any)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyTree(e)
		}
		return out
	}
	return x
}

// Open finds a scenario by reference: a path to a TOML file, or the name
// of a library scenario. A reference that contains a path separator or ends
// in ".toml", or names an existing file, is a path.
func Open(ref string) (*Source, error) {
	if strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		strings.HasSuffix(ref, ".toml") || fileExists(ref) {
		data, err := readScenarioFile(ref)
		if err != nil {
			return nil, err
		}
		return &Source{File: ref, Name: strings.TrimSuffix(filepath.Base(ref), ".toml"), Data: data}, nil
	}
	data, err := library.ReadFile("library/" + ref + ".toml")
	if err != nil {
		names := make([]string, 0)
		for _, e := range Library() {
			names = append(names, e.Name)
		}
		return nil, fmt.Errorf("%q is neither a scenario file nor a library scenario (library: %s)",
			ref, strings.Join(names, ", "))
	}
	return &Source{File: "library/" + ref + ".toml", Name: ref, Data: data, embedded: true}, nil
}

// MaxFileSize is the largest scenario file Open reads. A scenario of a
// million clients with a start time each is about 10 MB.
const MaxFileSize = 16 << 20

// readScenarioFile reads a scenario file of at most MaxFileSize bytes: a
// regular file or a pipe (/dev/stdin), not a device such as /dev/zero
// that never ends, nor a directory. A named pipe is opened without
// waiting for a writer: with none, it reads as empty.
func readScenarioFile(name string) ([]byte, error) {
	st, err := os.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such scenario file", name)
		}
		return nil, fmt.Errorf("%s: %v", name, unwrapPath(err))
	}
	if !readable(st.Mode()) {
		return nil, fmt.Errorf("%s: expected a regular file, found %s", name, FileKind(st.Mode()))
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: expected a scenario of at most %d MiB, found %d MiB", name, MaxFileSize>>20, st.Size()>>20)
	}
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	fh, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, unwrapPath(err))
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !readable(st.Mode()) {
		return nil, fmt.Errorf("%s: expected a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, unwrapPath(err))
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: expected a scenario of at most %d MiB", name, MaxFileSize>>20)
	}
	return data, nil
}

func readable(m fs.FileMode) bool { return m.IsRegular() || m&fs.ModeNamedPipe != 0 }

// FileKind names the kind of a file that is not a regular one, for a
// message: "a directory", "a named pipe (FIFO)", "a device".
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "a special file"
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Entry is one scenario of the embedded library.
type Entry struct {
	Name        string
	Description string
	// Header is the comment block at the top of the file: the situation,
	// its source, and what to look at in the report.
	Header string
}

// Library lists the embedded scenarios, sorted by name.
func Library() []Entry {
	files, err := fs.Glob(library, "library/*.toml")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	sort.Strings(files)
	var out []Entry
	for _, f := range files {
		data, _ := library.ReadFile(f)
		var head struct {
			Description string `toml:"description"`
		}
		_, _ = toml.Decode(string(data), &head) // a broken library file fails its own test
		out = append(out, Entry{
			Name:        strings.TrimSuffix(path.Base(f), ".toml"),
			Description: head.Description,
			Header:      headerComment(data),
		})
	}
	return out
}

// headerComment returns the leading comment lines of a TOML document,
// without their "#".
func headerComment(data []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			break
		}
		t = strings.TrimPrefix(strings.TrimPrefix(t, "#"), " ")
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String()
}

// bareDuration matches a line that gives a key a duration without quotes
// ("duration = 5m"), which TOML cannot read.
var bareDuration = regexp.MustCompile(`^\s*([A-Za-z0-9_."-]+)\s*=\s*([-+]?[0-9][0-9.]*(?:ns|us|µs|ms|s|m|h)(?:[0-9.]+(?:ns|us|µs|ms|s|m|h))*)\s*(?:#.*)?$`)

// bareDurationHint explains a TOML error on a line that gives a duration
// without quotes: durations are strings.
func bareDurationHint(doc string, line int) string {
	lines := strings.Split(doc, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	m := bareDuration.FindStringSubmatch(lines[line-1])
	if m == nil {
		return ""
	}
	return fmt.Sprintf("; a duration is a string in quotes: %s = %q", m[1], m[2])
}

// Parse decodes and validates a scenario document, then applies overrides:
// each is "key.path=value", as given to --set, with value in TOML syntax (a
// bare word that is not valid TOML is taken as a string, so
// duration=10m works). An override is decoded and validated exactly like
// the file. Every problem found is returned together, as an ErrorList.
func Parse(src *Source, overrides []string) (*Scenario, error) {
	p := &problems{file: src.File, overrides: map[string]string{}, bad: map[string]bool{}}
	d := src.decode()
	if d.errs != nil {
		return nil, slices.Clone(d.errs)
	}
	tree, _ := copyTree(d.tree).(map[string]any)
	if tree == nil {
		tree = map[string]any{}
	}
	p.index = d.index
	for _, o := range overrides {
		applyOverride(p, tree, o)
	}
	p.tree = tree
	format, ok := checkFormat(p, tree)
	if !ok {
		return nil, p.errs
	}

	s := new(Scenario)
	s.src = src
	s.setDefaults()
	(&decoder{p: p}).table("", tree, reflect.ValueOf(s).Elem())
	s.resolve(src.Name, p)
	s.validate(&checker{p: p})
	if len(p.errs) > 0 {
		p.errs.sort()
		return nil, p.errs
	}
	s.warnFormat(p, format)
	s.warnings = p.warns
	// The resolved scenario spells out every key with the meaning it ran
	// with: the current format's.
	s.Format = CurrentFormat
	return s, nil
}

// Warnings returns what loading the scenario found that does not stop it
// from running, in the order it stands in the file: each key of an older
// format whose meaning has changed since (see CurrentFormat). Each is an
// Error, positioned as errors are.
func (s *Scenario) Warnings() ErrorList { return s.warnings }

// Load opens and parses a scenario by reference (see Open and Parse).
func Load(ref string, overrides []string) (*Scenario, error) {
	src, err := Open(ref)
	if err != nil {
		return nil, err
	}
	return Parse(src, overrides)
}

// TOML returns the scenario with every value resolved, as a TOML document
// that Parse reads back to an equal Scenario.
func (s *Scenario) TOML() string {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(s); err != nil {
		panic(fmt.Sprintf("scenarios: encoding a resolved scenario: %v", err)) // every field type encodes
	}
	return b.String()
}
