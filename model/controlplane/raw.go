package controlplane

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/sim"
)

// Resources a server serves verbatim: a user's own Listeners,
// RouteConfigurations, Clusters and ClusterLoadAssignments (from a dump of
// their control plane), beside or instead of generated services. They go
// into the same go-control-plane cache, so they are versioned and sent
// exactly as the cache sends any resource.

// stageRaw stages msgs as the server's verbatim resources, replacing the
// set it had: each is put (identical bytes change nothing), and a
// verbatim resource of the old set that msgs lacks is removed.
func (s *Server) stageRaw(msgs []proto.Message) error {
	next := [NumTypes]map[string]proto.Message{}
	for t := range next {
		next[t] = map[string]proto.Message{}
	}
	for _, m := range msgs {
		t, name, err := typeOf(m)
		if err != nil {
			return fmt.Errorf("controlplane: server %q: %v", s.name, err)
		}
		if o, ok := s.owner[t][name]; ok {
			return fmt.Errorf("controlplane: server %q: %v resource %q is both a resource of its own and one of service %q", s.name, t, name, o)
		}
		if _, dup := next[t][name]; dup {
			return fmt.Errorf("controlplane: server %q: %v resource %q is given twice", s.name, t, name)
		}
		next[t][name] = m
	}
	for t := range s.raw {
		for _, name := range sortedNames(s.raw[t]) {
			if _, ok := next[t][name]; !ok {
				s.remove(ResourceType(t), name)
			}
		}
	}
	for t := range next {
		for _, name := range sortedNames(next[t]) {
			s.put(ResourceType(t), name, next[t][name])
		}
	}
	s.raw = next
	return nil
}

func sortedNames(m map[string]proto.Message) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Publish replaces the server's verbatim resources by msgs, as a control
// plane pushing the next version of a user's config does: resources whose
// bytes change are updated, new ones added, and verbatim resources msgs
// lacks deleted. The server keeps msgs: the caller must not modify them.
func (s *Server) Publish(now sim.Time, msgs []proto.Message) ([]Response, error) {
	s.advance(now)
	if err := s.stageRaw(msgs); err != nil {
		return nil, err
	}
	return s.commit(), nil
}

// RestoreResource serves again the verbatim resource (t, name) as last
// published, after DeleteResource removed it.
func (s *Server) RestoreResource(now sim.Time, t ResourceType, name string) ([]Response, error) {
	s.advance(now)
	if t >= NumTypes {
		return nil, fmt.Errorf("controlplane: unknown resource type %d", t)
	}
	m, ok := s.raw[t][name]
	if !ok {
		return nil, fmt.Errorf("controlplane: server %q has no verbatim %v resource %q", s.name, t, name)
	}
	s.put(t, name, m)
	return s.commit(), nil
}

// HasResource reports whether (t, name) is one of the server's verbatim
// resources (served or deleted) or a resource of one of its services.
func (s *Server) HasResource(t ResourceType, name string) bool {
	if t >= NumTypes {
		return false
	}
	if _, ok := s.raw[t][name]; ok {
		return true
	}
	_, ok := s.owner[t][name]
	return ok
}
