package archtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Pkg is one package of the import graph, as `go list -deps -json` gives it.
type Pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// Graph is the import graph of the module and everything it depends on,
// by import path.
type Graph map[string]*Pkg

// full is a rule path as an import path (still with any "/..." suffix).
func full(p string) string {
	first, _, _ := strings.Cut(p, "/")
	switch {
	case p == "...":
		return Module + "/..."
	case strings.Contains(first, "."), !isRlab(first):
		return p
	}
	return Module + "/" + p
}

// isRlab: first is a top-level folder of rlab, not a standard library
// package (no rlab folder is named like one).
func isRlab(first string) bool {
	switch first {
	case "agent", "bench", "cmd", "engine", "internal", "kinds", "labs", "steps", "templates":
		return true
	}
	return false
}

// matches: import path ip is p or, for "p/...", p or under it.
func matches(p, ip string) bool {
	if root, ok := strings.CutSuffix(p, "/..."); ok {
		return ip == root || strings.HasPrefix(ip, root+"/")
	}
	return ip == p
}

func matchAny(ps []string, ip string) bool {
	return slices.ContainsFunc(ps, func(p string) bool { return matches(full(p), ip) })
}

// short is ip without the module prefix, as the rules and docs write it.
func short(ip string) string {
	if s, ok := strings.CutPrefix(ip, Module+"/"); ok {
		return s
	}
	return ip
}

// Check is every way g breaks the rules, one line each; a Never line
// carries the import chain from the package to what it must not reach.
func Check(g Graph, rules []Rule) []string {
	var out []string
	var paths []string
	for ip := range g {
		paths = append(paths, ip)
	}
	sort.Strings(paths)
	for _, r := range rules {
		var subjects []string
		for _, ip := range paths {
			if matches(full(r.Pkg), ip) {
				subjects = append(subjects, ip)
			}
		}
		if len(subjects) == 0 {
			out = append(out, fmt.Sprintf("rule for %s: no such package (moved or renamed? update internal/archtest/rules.go)", r.Pkg))
			continue
		}
		for _, name := range append(append(append([]string{}, r.Only...), r.Never...), r.ImportedBy...) {
			if f := full(name); strings.HasPrefix(f, Module+"/") && !slices.ContainsFunc(paths, func(ip string) bool { return matches(f, ip) }) {
				out = append(out, fmt.Sprintf("rule for %s names %s: no such package (moved or renamed? update internal/archtest/rules.go)", r.Pkg, name))
			}
		}
		for _, ip := range subjects {
			p := g[ip]
			if r.Only != nil {
				for _, imp := range p.Imports {
					if q := g[imp]; q != nil && q.Standard || matchAny(r.Only, imp) {
						continue
					}
					allowed := "the standard library only"
					if len(r.Only) > 0 {
						allowed = "only " + strings.Join(r.Only, ", ") + " and the standard library"
					}
					out = append(out, fmt.Sprintf("%s imports %s: it may import %s (%s)", short(ip), short(imp), allowed, r.Why))
				}
			}
			for _, chain := range reach(g, ip, r.Never) {
				out = append(out, fmt.Sprintf("%s must not import %s: %s (%s)", short(ip), short(chain[len(chain)-1]), strings.Join(mapShort(chain), " -> "), r.Why))
			}
		}
		if r.ImportedBy != nil {
			for _, ip := range paths {
				if matchAny(r.ImportedBy, ip) {
					continue
				}
				for _, imp := range g[ip].Imports {
					if slices.Contains(subjects, imp) {
						out = append(out, fmt.Sprintf("%s imports %s, which only %s may import (%s)", short(ip), short(imp), orNothing(r.ImportedBy), r.Why))
					}
				}
			}
		}
	}
	return out
}

func orNothing(ps []string) string {
	if len(ps) == 0 {
		return "nothing"
	}
	return strings.Join(ps, ", ")
}

func mapShort(ips []string) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = short(ip)
	}
	return out
}

// reach is, for each package matching never that from imports however
// indirectly, the shortest import chain from from to it, in path order.
func reach(g Graph, from string, never []string) [][]string {
	if len(never) == 0 {
		return nil
	}
	parent := map[string]string{from: ""}
	queue := []string{from}
	var hits []string
	for len(queue) > 0 {
		ip := queue[0]
		queue = queue[1:]
		if ip != from && matchAny(never, ip) {
			hits = append(hits, ip)
			continue // one chain to it is enough; what lies beyond is its own rule's business
		}
		p := g[ip]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = ip
				queue = append(queue, imp)
			}
		}
	}
	sort.Strings(hits)
	var out [][]string
	for _, h := range hits {
		var chain []string
		for ip := h; ip != ""; ip = parent[ip] {
			chain = append(chain, ip)
		}
		slices.Reverse(chain)
		out = append(out, chain)
	}
	return out
}
