package main

import (
	"fmt"
	"io"
	"strings"
)

// state is "cold" or "warm": what a case is compared with on the Ansible
// side (the agent shipped, or already there).
func state(key string) string {
	if strings.HasSuffix(key, "-cold") {
		return "cold"
	}
	return "warm"
}

// writeTables prints, per host count, each case's median over its valid
// rounds, how many times faster than each Ansible variant in the same state
// (cold vs cold, warm vs warm), the ratio to the OpenSSH floor, and the raw
// rounds.
func writeTables(w io.Writer, results []*nRes) {
	fmt.Fprintln(w, "| hosts | case | median s | valid rounds | Ansible CM=no / this | Ansible ControlPersist / this | this / floor | rounds (s) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		floor := 0.0
		if f := r.get("floor"); f != nil {
			floor, _ = f.median()
		}
		for _, c := range r.Cases {
			m, valid := c.median()
			ratio := func(key string) string {
				a := r.get(key + "-" + state(c.Key))
				if a == nil || strings.HasPrefix(c.Key, "ansible") || c.Key == "floor" {
					return "—"
				}
				am, _ := a.median()
				if m == 0 || am == 0 {
					return "—"
				}
				return fmt.Sprintf("%.1fx", am/m)
			}
			fl := "—"
			if floor > 0 && m > 0 {
				fl = fmt.Sprintf("%.2fx", m/floor)
			}
			var rounds []string
			for _, run := range c.Runs {
				s := fmt.Sprintf("%.2f", run.Seconds)
				if !run.Valid {
					s += "✗"
				}
				rounds = append(rounds, s)
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %d/%d | %s | %s | %s | %s |\n", r.Hosts, c.Name, m, valid, len(c.Runs),
				ratio("ansible"), ratio("ansible-cp"), fl, strings.Join(rounds, ", "))
		}
	}
	for _, r := range results {
		fmt.Fprintf(w, "\n%d hosts: load average at the end %s", r.Hosts, r.LoadEnd)
	}
	fmt.Fprintln(w)
}
