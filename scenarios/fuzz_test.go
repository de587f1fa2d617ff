package scenarios

import (
	"errors"
	"testing"
)

// FuzzParse checks that no document, valid or not, makes Parse panic, and
// that every failure is an ErrorList whose entries name a position or an
// override. Run it with go test -fuzz FuzzParse ./scenarios/.
func FuzzParse(f *testing.F) {
	f.Add(minimal, "seed=3")
	f.Add("[[fleet.group]]\nclients = -5\nCLIENTS = 2\n", "fleet.group[0].clients=x")
	f.Add("duration = 300\n[fleet]\ngroup = 3\n", "fleet..x=1")
	f.Add("[[fleet.group]]\nclients=1\n[[fleet.restart]]\ngroup=\"x\"\nfraction=nan\n", `"a.b"=1`)
	f.Add("x = '''\n[fake]\n'''\n[fleet]\n", "fleet.group[9].name=a")
	f.Add("[network]\nlatency={dist=\"uniform\",min=\"5ms\"}\n[[fleet.group]]\nclients=1\n[[expect]]\nmetric=\"fleet.strts\"\nmin=2\nmax=1\n", "expect[0].max=nan")
	f.Fuzz(func(t *testing.T, doc, set string) {
		_, err := Parse(&Source{File: "f.toml", Name: "f", Data: []byte(doc)}, []string{set})
		if err == nil {
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error is not a non-empty ErrorList: %v", err)
		}
		for _, e := range list {
			if e.Msg == "" {
				t.Errorf("error without a message: %+v", e)
			}
		}
	})
}
