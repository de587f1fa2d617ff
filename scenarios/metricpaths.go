package scenarios

import (
	"fmt"
	"strings"
)

// validateMetricPaths checks that the figures a run reports have distinct
// paths in summary.json. summary.json nests figures by the dots of their
// paths, and names may hold dots: a group "web" reports
// groups.web.rpc.failed, which a group named "web.rpc.failed" would turn
// into an object. The run could not write its summary; the scenario is
// refused instead, at the name that makes the collision.
func (s *Scenario) validateMetricPaths(c *checker) {
	if len(c.p.errs) > 0 {
		return // only a valid scenario converts to a fleet config
	}
	paths := c.metricPaths(s)
	for i := 1; i < len(paths); i++ {
		a, b := paths[i-1], paths[i]
		if a != b && !strings.HasPrefix(b, a+".") {
			continue
		}
		key, name := s.metricOwner(b)
		if key == "" {
			key, name = s.metricOwner(a)
		}
		c.check(false, key, "the name %q makes summary.json report %q, which collides with %q: figures nest by the dots of their paths; rename it (a name without dots cannot collide)", name, b, a)
		return
	}
}

// metricOwner returns the name key of the group, group target or control
// plane whose figure path is, and the name: the longest name that
// prefixes it (a target's figures are under its group's).
func (s *Scenario) metricOwner(path string) (key, name string) {
	for i, g := range s.Fleet.Groups {
		p := "groups." + g.Name + "."
		if !strings.HasPrefix(path, p) {
			continue
		}
		if len(g.Name) > len(name) {
			key, name = fmt.Sprintf("fleet.group[%d].name", i), g.Name
		}
		for j, t := range g.Targets {
			if strings.HasPrefix(path, p+"targets."+t+".") && len(g.Targets) > 1 {
				key, name = fmt.Sprintf("fleet.group[%d].targets[%d]", i, j), t
			}
		}
	}
	for i, cp := range s.ControlPlanes {
		if strings.HasPrefix(path, "control_plane."+cp.Name+".") && len(cp.Name) > len(name) {
			key, name = fmt.Sprintf("control_plane[%d].name", i), cp.Name
		}
	}
	return key, name
}
