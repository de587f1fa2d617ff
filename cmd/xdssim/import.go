package main

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/scenarios/mesh"
)

var importCommand = command{
	name:    "import",
	summary: "write a starter scenario from a bootstrap file and a dump of your control plane's resources",
	about: `Write a starter scenario for your own mesh: one control plane per xds_servers
server_uri of the bootstrap files, serving the resources of the dumps
verbatim (--resources: a CSDS ClientStatusResponse from grpcdebug, an Envoy
ConfigDump from istioctl proxy-config all -o json, or plain resources; JSON or
YAML); one client group per bootstrap file, targeting every API listener of
the dumps; and a control-plane outage, commented out, to start from. The
scenario names the files relative to where it is written, so that
'xdssim run' on it works from anywhere. What the simulator does not use of
the bootstrap, and what it does not model of the resources, is written into
the scenario as comments and printed on stderr.

  xdssim import --bootstrap bootstrap.json --resources dump.json --out mesh.toml
  xdssim run mesh.toml`,
	flags: []flagDoc{
		{name: "bootstrap", arg: "FILE", doc: "a gRPC bootstrap file; one client group each (repeatable, at least one)", file: true},
		{name: "resources", arg: "FILE", doc: "a dump of the control plane's resources (repeatable, at least one)", file: true},
		{name: "out", arg: "FILE", doc: "where to write the scenario (default: standard output, naming files relative to the current directory)", file: true},
		{name: "name", arg: "NAME", doc: "the scenario's name (default: the --out file's base name, else my-mesh)"},
	},
	exec: cmdImport,
}

func cmdImport(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	if len(pos) > 0 {
		return badInput("import: unexpected argument %q (the files are given with --bootstrap and --resources)", pos[0])
	}
	if !vals.given("bootstrap") || !vals.given("resources") {
		return badInput("import: expected --bootstrap FILE and --resources FILE (see 'xdssim import --help')")
	}
	out := vals.last("out")
	if out != "" {
		if err := checkOutputFile("out", out); err != nil {
			return err // before the files are read, not after
		}
	}
	name := vals.last("name")
	if name == "" {
		name = "my-mesh"
		if out != "" {
			name = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
		}
	}
	name = strings.ToLower(name)
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`).MatchString(name) {
		return badInput("--name: expected lowercase letters, digits, '.', '-' and '_', found %q", name)
	}
	var boots []*mesh.Bootstrap
	for _, f := range vals["bootstrap"] {
		b, err := mesh.ReadBootstrap(f)
		if err != nil {
			return inputError{err}
		}
		boots = append(boots, b)
	}
	var dumps []*mesh.Dump
	for _, f := range vals["resources"] {
		d, err := mesh.Read(f)
		if err != nil {
			return inputError{err}
		}
		dumps = append(dumps, d)
	}
	base := "."
	if out != "" {
		base = filepath.Dir(out)
	}
	doc, err := importScenario(name, base, boots, dumps)
	if err != nil {
		return err
	}
	// The scenario must load: a starter that does not is our bug.
	src := &scenarios.Source{File: filepath.Join(base, name+".toml"), Name: name, Data: []byte(doc)}
	s, err := scenarios.Parse(src, nil)
	if err != nil {
		return fmt.Errorf("import: the scenario written does not load: %v", err)
	}
	notes := s.MeshNotes()
	if len(notes) > 0 {
		doc += "\n# What xdssim does not use, or does not model, of these files:\n"
		for _, n := range notes {
			fmt.Fprintf(stderr, "xdssim: %s\n", n)
			doc += "#   " + n + "\n"
		}
	}
	if out == "" {
		_, err := io.WriteString(stdout, doc)
		return err
	}
	if err := writeFile("out", out, writeBytes([]byte(doc))); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: wrote %s; run it with: xdssim run %s\n", out, out)
	return nil
}

// relTo names file relative to dir, as the scenario written there names
// it.
func relTo(dir, file string) string {
	a, err1 := filepath.Abs(dir)
	b, err2 := filepath.Abs(file)
	if err1 != nil || err2 != nil {
		return file
	}
	r, err := filepath.Rel(a, b)
	if err != nil {
		return b
	}
	return filepath.ToSlash(r)
}

var nameChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// serverName names a control plane after its server_uri's host.
func serverName(uri string, i int) string {
	h := uri
	if strings.HasPrefix(h, "unix:") {
		h = "" // a local socket names no host
	}
	if k := strings.Index(h, "://"); k >= 0 {
		h = h[k+3:]
	}
	h = strings.Trim(h, "/")
	if k := strings.IndexAny(h, ":/"); k >= 0 {
		h = h[:k]
	}
	if k := strings.IndexByte(h, '.'); k > 0 {
		h = h[:k]
	}
	h = strings.Trim(nameChars.ReplaceAllString(strings.ToLower(h), "-"), "-._")
	if h == "" || h == "unix" || h == "localhost" {
		h = "cp"
	}
	if i > 0 {
		h += "-" + strconv.Itoa(i)
	}
	return h
}

// importScenario writes the starter scenario's TOML.
func importScenario(name, dir string, boots []*mesh.Bootstrap, dumps []*mesh.Dump) (string, error) {
	var b strings.Builder
	q := strconv.Quote
	list := func(xs []string) string {
		qs := make([]string, len(xs))
		for i, x := range xs {
			qs[i] = q(x)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	var files []string
	var targets []string
	for _, d := range dumps {
		files = append(files, relTo(dir, d.File))
		for _, r := range d.Resources {
			if l, ok := r.Message.(*listenerpb.Listener); ok && l.GetApiListener() != nil && !slices.Contains(targets, r.Name) {
				targets = append(targets, r.Name)
			}
		}
	}
	if len(targets) == 0 {
		return "", badInput("import: the dumps hold no API listener (a client Listener with api_listener) for clients to target")
	}
	var uris []string
	for _, bt := range boots {
		for _, s := range bt.Servers {
			if !slices.Contains(uris, s.URI) {
				uris = append(uris, s.URI)
			}
		}
	}
	fmt.Fprintf(&b, "# A starter scenario for your own mesh, written by xdssim import from\n# %s and %s.\n",
		strings.Join(mapRel(dir, boots), ", "), strings.Join(files, ", "))
	b.WriteString("# Set each group's profile to the gRPC implementation it runs, its clients\n# and RPC rate to your fleet's, and uncomment the fault to try an outage.\n")
	fmt.Fprintf(&b, "format = %d\nname = %s\ndescription = %s\nduration = \"10m\"\n", scenarios.CurrentFormat, q(name), q("your mesh, from "+strings.Join(files, ", ")))
	for i, uri := range uris {
		fmt.Fprintf(&b, "\n[[control_plane]]\nname = %s\nserver_uri = %s\nresources = %s\n", q(serverName(uri, i)), q(uri), list(files))
	}
	used := map[string]int{}
	for _, bt := range boots {
		g := nameChars.ReplaceAllString(strings.ToLower(strings.TrimSuffix(filepath.Base(bt.File), filepath.Ext(bt.File))), "-")
		g = strings.Trim(g, "-._")
		if g == "" {
			g = "group"
		}
		if n := used[g]; n > 0 {
			g += "-" + strconv.Itoa(n)
		}
		used[g]++
		fmt.Fprintf(&b, "\n[[fleet.group]]\nname = %s\nclients = 100\nstart_spread = \"30s\"\nprofile = \"grpc-go\"  # grpc-go, grpc-java, grpc-core or spec\nbootstrap = %s\ntargets = %s\nrpc = { rate = 1 }\n",
			q(g), q(relTo(dir, bt.File)), list(targets))
	}
	fmt.Fprintf(&b, "\n# What happens to your clients if the control plane is down for 5 minutes?\n# [[fault]]\n# kind = \"server-down\"\n# servers = [%s]\n# at = \"2m\"\n# duration = \"5m\"\n", q(serverName(uris[0], 0)))
	return b.String(), nil
}

func mapRel(dir string, boots []*mesh.Bootstrap) []string {
	var out []string
	for _, bt := range boots {
		out = append(out, relTo(dir, bt.File))
	}
	return out
}
