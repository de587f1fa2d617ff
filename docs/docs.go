// Package docs embeds the parts of the user documentation that the
// binary reads: the scenario reference, whose key table documents every
// scenario key (its type, default and meaning) for `xdssim schema`.
package docs

import _ "embed"

// ScenarioReference is docs/scenario-reference.md. A test in package
// scenarios keeps its key table in step with the scenario schema: every
// key has a row and every row is a key.
//
//go:embed scenario-reference.md
var ScenarioReference string
