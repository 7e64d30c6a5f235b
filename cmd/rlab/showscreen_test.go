package main

import (
	"strings"
	"testing"
)

// screenLines is one terminal screen: what a workload's part of rlab show
// must fit in (issue 25: show was 159 lines for the demo's 4 workloads).
const screenLines = 24

// TestShowOneScreenPerWorkload (issue 25, "Done when"): rlab show of a
// real run (the demo's, and the lossy sweep's with its counters) puts
// each workload's result in the Workloads table before any workload's
// detail, and each workload's part fits one screen.
func TestShowOneScreenPerWorkload(t *testing.T) {
	for _, run := range []string{demoRun, lossyRun} {
		t.Run(run, func(t *testing.T) {
			_, out, _ := execute(t, newShowCmd(), run)
			lines := strings.Split(out, "\n")
			type section struct {
				title string
				lines []string
			}
			var secs []section
			for i := 1; i < len(lines); i++ {
				if l := lines[i]; l != "" && strings.Trim(l, "-") == "" && len(lines[i-1]) > 0 {
					secs = append(secs, section{title: lines[i-1]})
					continue
				}
				if len(secs) > 0 && (i+1 >= len(lines) || strings.Trim(lines[i+1], "-") != "" || lines[i+1] == "") {
					secs[len(secs)-1].lines = append(secs[len(secs)-1].lines, lines[i])
				}
			}
			if len(secs) < 2 || secs[0].title != "Workloads" {
				t.Fatalf("show does not begin with the Workloads table:\n%s", out)
			}
			table := secs[0].lines
			for len(table) > 0 && strings.TrimSpace(table[0]) == "" {
				table = table[1:]
			}
			head := []rune(table[0])
			col := strings.Index(table[0], " result")
			if col < 0 {
				t.Fatalf("the Workloads table has no result column: %q", table[0])
			}
			col = len([]rune(table[0][:col])) + 1
			workloads := 0
			for _, s := range secs[1:] {
				name, _, ok := strings.Cut(s.title, " (")
				if !ok {
					continue // RDMA vs TCP, alone vs together
				}
				workloads++
				n := len(s.lines)
				for n > 0 && strings.TrimSpace(s.lines[n-1]) == "" {
					n--
				}
				if n+2 > screenLines {
					t.Errorf("%s: %d lines, more than a screen (%d):\n%s", s.title, n+2, screenLines, strings.Join(s.lines, "\n"))
				}
				found := false
				for _, row := range table[1:] {
					r := []rune(row)
					if !strings.HasPrefix(row, name+" ") || len(r) <= col {
						continue
					}
					found = true
					if res := strings.Fields(string(r[col:])); len(res) == 0 || res[0] == "–" {
						t.Errorf("workload %s: no result in the Workloads table: %q (header %q)", name, row, string(head))
					}
				}
				if !found {
					t.Errorf("workload %s: no row in the Workloads table", name)
				}
			}
			if workloads == 0 {
				t.Fatalf("no workload section in:\n%s", out)
			}
		})
	}
}
