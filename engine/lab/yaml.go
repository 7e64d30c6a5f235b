package lab

import (
	"fmt"
	"strings"

	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"gopkg.in/yaml.v3"
)

// maxYAMLNodes bounds the values yamldecode builds, aliases expanded: a
// student list or an inventory has thousands at most, while a few lines of
// nested aliases ("billion laughs") expand to billions, and go-cty-yaml,
// the decoder Terraform uses, expands them all.
const maxYAMLNodes = 1_000_000

// yamlDecodeFunc is Terraform's yamldecode (go-cty-yaml, the same code):
// an Ansible YAML inventory or a YAML student list read with
// yamldecode(file("students.yaml")) feeds a for_each as jsondecode does.
// It first counts what the document expands to (yaml.v3 keeps aliases as
// references, so the count costs the size of the text) and refuses a
// document beyond maxYAMLNodes.
var yamlDecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "src", Type: cty.String}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if !args[0].IsKnown() {
			return cty.DynamicPseudoType, nil
		}
		if err := checkYAMLSize(args[0].AsString()); err != nil {
			return cty.NilType, function.NewArgError(0, err)
		}
		return ctyyaml.Standard.ImpliedType([]byte(args[0].AsString()))
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		return ctyyaml.Standard.Unmarshal([]byte(args[0].AsString()), retType)
	},
})

// maxYAMLDepth bounds how deeply the values yamldecode builds nest,
// aliases followed: an inventory nests a few levels, and go-cty-yaml's
// types cost the square of the depth (200,000 nested lists in 400 KB kept
// `rlab validate` computing for half an hour).
const maxYAMLDepth = 100

// checkYAMLSize refuses a document that expands to more than maxYAMLNodes
// values or nests deeper than maxYAMLDepth. One yaml.v3 cannot parse is
// left to go-cty-yaml to report, but for its depth limit (10,000), which
// is the same refusal.
func checkYAMLSize(src string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		if strings.Contains(err.Error(), "max depth") {
			return fmt.Errorf("the YAML document nests deeper than %d levels; yamldecode reads inventories and lists, not that", maxYAMLDepth)
		}
		return nil
	}
	type measure struct{ count, height int }
	tooBig := measure{maxYAMLNodes + 1, maxYAMLDepth + 1}
	memo := map[*yaml.Node]measure{}
	var size func(n *yaml.Node, depth int) measure
	size = func(n *yaml.Node, depth int) measure {
		if n == nil {
			return tooBig
		}
		if depth > maxYAMLDepth+1 {
			return measure{1, maxYAMLDepth + 2}
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = tooBig // a cycle counts as too large
		m := measure{1, 1}
		if n.Kind == yaml.AliasNode {
			m = size(n.Alias, depth) // an alias is its anchor's value, in its place
		}
		for _, c := range n.Content {
			cm := size(c, depth+1)
			m.count += cm.count
			m.height = max(m.height, cm.height+1)
			if m.count > maxYAMLNodes || m.height > maxYAMLDepth+1 {
				break
			}
		}
		memo[n] = m
		return m
	}
	// The document node and a mapping's key/value pairs add a level the
	// decoded value does not have: the height counts nodes, generously.
	switch m := size(&doc, 0); {
	case m.count > maxYAMLNodes:
		return fmt.Errorf("the YAML document expands to more than %d values (through its aliases); yamldecode reads inventories and lists, not that", maxYAMLNodes)
	case m.height > maxYAMLDepth+1:
		return fmt.Errorf("the YAML document nests deeper than %d levels; yamldecode reads inventories and lists, not that", maxYAMLDepth)
	}
	return nil
}

// jsonDecodeFunc is Terraform's jsondecode, refusing a document nested
// deeper than maxYAMLDepth first: cty's types of nested tuples cost the
// square of the depth (an 18 KB file of 9,000 nested lists took 23 s and
// 1.4 GB; encoding/json stops only at 10,000).
var jsonDecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].IsKnown() && jsonDepth(args[0].AsString()) > maxYAMLDepth {
			return cty.NilType, function.NewArgError(0, fmt.Errorf("the JSON document nests deeper than %d levels; jsondecode reads inventories and lists, not that", maxYAMLDepth))
		}
		return stdlib.JSONDecodeFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		return stdlib.JSONDecodeFunc.Call(args)
	},
})

// jsonDepth is how deeply s's arrays and objects nest (strings skipped),
// in one pass; it stops counting past maxYAMLDepth.
func jsonDepth(s string) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > deepest {
				if deepest = depth; deepest > maxYAMLDepth {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
