package lab

import (
	"fmt"

	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
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

// checkYAMLSize refuses a document that expands to more than maxYAMLNodes
// values. One yaml.v3 cannot parse is left to go-cty-yaml to report.
func checkYAMLSize(src string) error {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(src), &doc) != nil {
		return nil
	}
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 10000 {
			return maxYAMLNodes + 1
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = maxYAMLNodes + 1 // a cycle counts as too large
		total := 1
		if n.Kind == yaml.AliasNode {
			total = size(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			total += size(c, depth+1)
			if total > maxYAMLNodes {
				break
			}
		}
		memo[n] = total
		return total
	}
	if n := size(&doc, 0); n > maxYAMLNodes {
		return fmt.Errorf("the YAML document expands to more than %d values (through its aliases); yamldecode reads inventories and lists, not that", maxYAMLNodes)
	}
	return nil
}
