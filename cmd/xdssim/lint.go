package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/scenarios/mesh"
)

var lintCommand = command{
	name: "lint", args: "RESOURCES...",
	summary: "check xDS resources as each gRPC implementation's parser does: who NACKs, what is ignored",
	about: `Read dump files (a CSDS ClientStatusResponse, an Envoy ConfigDump or plain
resources; JSON or YAML) and validate every Listener, RouteConfiguration,
Cluster and ClusterLoadAssignment as each chosen implementation's XdsClient
does: accepted (ACK), or NACKed with that client's rule, the function of its
parser that decides it, and the error text it puts in the NACK. It also lists,
per resource, the fields gRPC clients ignore and those that change what a
real client does and that xdssim does not model. Nothing is simulated.

Exit code 3 when a chosen profile NACKs a resource, so that a CI job can
gate a config change: xdssim lint next.json --profiles grpc-java,grpc-core.`,
	flags: []flagDoc{
		{name: "profiles", arg: "LIST", doc: "comma-separated implementations to check: grpc-go, grpc-java, grpc-core, spec (default all four)"},
		{name: "json", doc: "print the results as JSON instead of a table"},
	},
	breach: "a chosen profile NACKs a resource",
	exec:   cmdLint,
}

// lintProfiles are the implementations lint checks by default.
var lintProfiles = []string{xdsclient.ProfileGRPCGo, xdsclient.ProfileGRPCJava, xdsclient.ProfileGRPCCore, xdsclient.ProfileSpec}

// lintReport is lint's result, as --json prints it.
type lintReport struct {
	Files     []string       `json:"files"`
	Profiles  []string       `json:"profiles"`
	Resources []lintResource `json:"resources"`
	// NACKs counts the (resource, profile) pairs that are NACKed.
	NACKs int `json:"nacks"`
}

type lintResource struct {
	File       string       `json:"file"`
	Type       string       `json:"type"`
	Name       string       `json:"name"`
	Results    []lintResult `json:"results"`
	Ignored    []lintField  `json:"ignored"`
	Unmodelled []lintField  `json:"unmodelled"`
}

type lintResult struct {
	Profile string `json:"profile"`
	// Verdict is ACK or NACK.
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
	Source  string `json:"source,omitempty"`
	Error   string `json:"error,omitempty"`
}

type lintField struct {
	Path string `json:"path"`
	What string `json:"what"`
}

func cmdLint(vals flagValues, pos []string, stdout, _ io.Writer) error {
	if len(pos) == 0 {
		return badInput("lint: expected one or more dump files (see 'xdssim lint --help')")
	}
	profiles := lintProfiles
	if vals.given("profiles") {
		profiles = nil
		for _, p := range strings.Split(vals.last("profiles"), ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(lintProfiles, p) {
				return badInput("--profiles: expected a comma-separated list of %s, found %q", strings.Join(lintProfiles, ", "), p)
			}
			if !slices.Contains(profiles, p) {
				profiles = append(profiles, p)
			}
		}
	}
	var dumps []*mesh.Dump
	for _, f := range pos {
		d, err := mesh.Read(f)
		if err != nil {
			return inputError{err}
		}
		dumps = append(dumps, d)
	}
	rep := lint(dumps, profiles)
	var err error
	if vals.given("json") {
		err = writeLintJSON(stdout, rep)
	} else {
		err = writeLintTable(stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.NACKs > 0 {
		return breachedError{msg: fmt.Sprintf("%d of %d checks NACKed (resources × profiles)", rep.NACKs, len(rep.Resources)*len(profiles))}
	}
	return nil
}

// lint validates every resource of dumps in every profile: each resource
// is marshalled into an Any, as a server sends it, and decoded and
// validated by the XdsClient model exactly as the fleet's clients do.
func lint(dumps []*mesh.Dump, profiles []string) lintReport {
	rep := lintReport{Profiles: profiles}
	for _, d := range dumps {
		rep.Files = append(rep.Files, d.File)
		for _, r := range d.Resources {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.Message)
			if err != nil {
				panic(fmt.Sprintf("lint: marshalling a decoded resource: %v", err))
			}
			dec := xdsclient.Decode(xdsclient.ResourceType(r.Type), &anypb.Any{TypeUrl: r.Type.TypeURL(), Value: b})
			lr := lintResource{File: d.File, Type: r.Type.String(), Name: r.Name, Ignored: []lintField{}, Unmodelled: []lintField{}}
			for _, p := range profiles {
				prof, _ := xdsclient.ProfileByName(p)
				fs := prof.FilterSet()
				res := lintResult{Profile: p, Verdict: "ACK"}
				if e := dec.ErrIn(fs); e != nil {
					res = lintResult{Profile: p, Verdict: "NACK", Rule: string(e.Rule), Source: e.Rule.Source(fs), Error: e.Detail}
					rep.NACKs++
				}
				lr.Results = append(lr.Results, res)
			}
			for _, f := range dataplane.Audit(r.Message) {
				lf := lintField{Path: f.Path, What: f.What}
				if f.Kind == dataplane.Ignored {
					lr.Ignored = append(lr.Ignored, lf)
				} else {
					lr.Unmodelled = append(lr.Unmodelled, lf)
				}
			}
			rep.Resources = append(rep.Resources, lr)
		}
	}
	return rep
}

func writeLintJSON(w io.Writer, rep lintReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeLintTable prints one row per resource and profile, then the
// fields each resource has that clients ignore or xdssim does not model.
func writeLintTable(w io.Writer, rep lintReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tNAME\tPROFILE\tVERDICT\tRULE\tERROR")
	for _, r := range rep.Resources {
		for _, res := range r.Results {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Type, r.Name, res.Profile, res.Verdict, res.Rule, res.Error)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var sources []string
	for _, r := range rep.Resources {
		for _, res := range r.Results {
			if res.Source != "" {
				s := fmt.Sprintf("  %s in %s: %s", res.Rule, res.Profile, res.Source)
				if !slices.Contains(sources, s) {
					sources = append(sources, s)
				}
			}
		}
	}
	if len(sources) > 0 {
		fmt.Fprintln(w, "\nRules, as each client's parser decides them:")
		for _, s := range sources {
			fmt.Fprintln(w, s)
		}
	}
	for _, sec := range []struct {
		title string
		get   func(lintResource) []lintField
	}{
		{"Not modelled by xdssim (real clients act on these fields)", func(r lintResource) []lintField { return r.Unmodelled }},
		{"Ignored by gRPC clients", func(r lintResource) []lintField { return r.Ignored }},
	} {
		first := true
		for _, r := range rep.Resources {
			for _, f := range sec.get(r) {
				if first {
					fmt.Fprintf(w, "\n%s:\n", sec.title)
					first = false
				}
				fmt.Fprintf(w, "  %s %s: %s: %s\n", r.Type, r.Name, f.Path, f.What)
			}
		}
	}
	fmt.Fprintf(w, "\n%d resources from %s; %d of %d checks NACKed\n", len(rep.Resources), strings.Join(rep.Files, ", "),
		rep.NACKs, len(rep.Resources)*len(rep.Profiles))
	return nil
}
