package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// CurrentFormat is the scenario format this xdssim writes and reads
// without warnings: the value of the top-level key format. A file without
// the key is format 1, the format of every scenario written before
// formats were numbered.
//
// Each format after the first changed what some keys mean, so that a file
// of an older format would run differently from how its author saw it run.
// Such a file still runs, with the current meaning, but validate and run
// warn about each changed key it uses (formatChanges); a file of a newer
// format than CurrentFormat is refused. docs/scenario-reference.md
// ("Format versions") lists the formats and what changed in each.
const CurrentFormat = 2

// formatChange is one change of meaning that a format brought: warn
// reports, for a scenario of an older format, each key the scenario uses
// whose meaning the change touched.
type formatChange struct {
	format int
	warn   func(s *Scenario, w *formatWarner)
}

// formatWarner records the warnings of one scenario's format changes.
type formatWarner struct {
	p    *problems
	from int // the scenario's format
}

// warn records a warning at the key path, as a problem is recorded: at
// the key's value in the file, or at the --set that gave it.
func (w *formatWarner) warn(path, format string, args ...any) {
	e := w.p.locate(path, false, fmt.Sprintf(format, args...))
	w.p.warns = append(w.p.warns, e)
}

// formatChanges are the changes of meaning, by the format that brought
// them, oldest first.
var formatChanges = []formatChange{
	{format: 2, warn: warnSnapshotVersions},
	{format: 2, warn: warnNACKsHeld},
}

// warnSnapshotVersions: in format 1, cache = "snapshot" was a SnapshotCache
// with a version per type (what snapshot-per-type is now), and it answered
// every NACK at once. Since format 2 it is a snapshot made as
// cache.NewSnapshot makes it, one version for every type (every change
// re-sends every type, and the clients ACK the unchanged ones), and a NACK
// is held unless on_nack says otherwise (controlplane b8b2d56, scenarios
// c9e33b5).
func warnSnapshotVersions(s *Scenario, w *formatWarner) {
	for i, cp := range s.ControlPlanes {
		p := fmt.Sprintf("control_plane[%d]", i)
		if cp.Cache != "snapshot" || !w.p.given(p+".cache") {
			continue
		}
		now, old, fix := "", "", ""
		if !w.p.given(p + ".on_nack") {
			now, old, fix = ", and NACKs are held (on_nack = \"hold\")", " and answered every NACK at once", " and on_nack = \"resend\""
		}
		w.warn(p+".cache", "\"snapshot\" means something else since format 2 (this file is format %d): one version for the whole snapshot, so that every change re-sends every type and the clients ACK the unchanged ones%s; "+
			"format %d's \"snapshot\" had a version per type%s. Write cache = \"snapshot-per-type\"%s for the old behaviour, or format = %d to keep the new one",
			w.from, now, w.from, old, fix, CurrentFormat)
	}
}

// warnNACKsHeld: in format 1 a LinearCache answered at once a NACK of a
// client that had accepted nothing of the type yet (version_info "", the
// raw LinearCache's rule); since format 2 a server without on_nack holds
// every NACK. A client NACKs its first response of a type when the server
// has an invalid resource when it subscribes: a service's defect, or a
// publish_invalid change. The snapshot cache's NACKs are
// warnSnapshotVersions'.
func warnNACKsHeld(s *Scenario, w *formatWarner) {
	held := func(i int) bool {
		return s.ControlPlanes[i].Cache == "linear" && !w.p.given(fmt.Sprintf("control_plane[%d].on_nack", i))
	}
	warn := func(path, who string, servers []string) {
		w.warn(path, "NACKs are held by default since format 2 (this file is format %d); in format %d a LinearCache answered at once the NACK of a client that had accepted nothing of the type yet, "+
			"so a client that %s NACKed it again and again until the fix. Add on_nack = \"resend\" to control plane %s for the old behaviour, or format = %d to keep the new one",
			w.from, w.from, who, strings.Join(servers, ", "), CurrentFormat)
	}
	for i, cp := range s.ControlPlanes {
		for j, svc := range cp.Services {
			if svc.Defect != "" && held(i) {
				warn(fmt.Sprintf("control_plane[%d].service[%d].defect", i, j), "subscribed to the defective resource", []string{cp.Name})
			}
		}
	}
	for i, ch := range s.Changes {
		if ch.Action != "publish_invalid" {
			continue
		}
		var on []string
		for k, cp := range s.ControlPlanes {
			if held(k) && (len(ch.Servers) == 0 || slices.Contains(ch.Servers, cp.Name)) && serves(cp, ch.Service) {
				on = append(on, cp.Name)
			}
		}
		if len(on) > 0 {
			warn(fmt.Sprintf("change[%d].action", i), "subscribed while the invalid resource was published", on)
		}
	}
}

// serves reports whether cp serves the named service.
func serves(cp ControlPlane, service string) bool {
	return slices.ContainsFunc(cp.Services, func(svc Service) bool { return svc.Name == service })
}

// checkFormat reads the document's format before anything else is
// decoded: a format newer than CurrentFormat is refused at once, since its
// other keys may mean what this xdssim cannot know. It returns the format
// the document is written in (1 without the key) and false if the load
// must stop.
func checkFormat(p *problems, tree map[string]any) (int, bool) {
	x, ok := tree["format"]
	if !ok {
		return 1, true
	}
	n, isInt := x.(int64)
	switch {
	case !isInt:
		p.valueError("format", "expected an integer, the scenario format (%d is the current one), found %s", CurrentFormat, describe(x))
		return 0, false
	case n > CurrentFormat:
		p.valueError("format", "this scenario is format %d, and this xdssim reads formats 1 to %d: upgrade xdssim to run it", n, CurrentFormat)
		return 0, false
	case n < 1:
		p.valueError("format", "expected a format from 1 to %d (%d is the current one), found %d", CurrentFormat, CurrentFormat, n)
		return 0, false
	}
	return int(n), true
}

// warnFormat records a warning for each key s uses whose meaning changed
// since its format.
func (s *Scenario) warnFormat(p *problems, from int) {
	w := &formatWarner{p: p, from: from}
	for _, c := range formatChanges {
		if c.format > from {
			c.warn(s, w)
		}
	}
	p.warns.sort()
}
