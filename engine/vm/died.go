package vm

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// Died says why the VM of the named host stopped under the run, or "" while
// its qemu runs (or the host is no VM of this set). A guest started with
// panic=-1 and -no-reboot takes qemu with it when its kernel panics: the
// reason is then read from its console (the kernel's oops, where it was,
// the panic line), so a run says "the guest's kernel panicked in rdma_rxe"
// rather than only "agent lost" (CI's failed stop 36: a trixie guest's
// 6.12 rxe double-faulted under ib_write_bw --write_with_imm, and the run
// said its agent's session ended). wait bounds the wait for a qemu whose
// guest is gone but which has not been reaped yet.
func (s *Set) Died(host string, wait time.Duration) string {
	for _, v := range s.VMs {
		if v.Name != host || v.exited == nil {
			continue
		}
		select {
		case <-v.exited:
		case <-time.After(wait):
			return ""
		}
		why := fmt.Sprintf("its VM stopped (qemu exited: %v)", v.waitErr())
		if v.waitErr() == nil {
			why = "its VM stopped (qemu exited)"
		}
		rel := v.Console
		if r, err := filepath.Rel(filepath.Dir(s.Dir), v.Console); err == nil {
			rel = r
		}
		if p := PanicSummary(consoleLines(v.Console, 400)); p != "" {
			return fmt.Sprintf("%s: the guest's kernel panicked: %s; its console is in %s", why, p, rel)
		}
		return fmt.Sprintf("%s; its console is in %s", why, rel)
	}
	return ""
}

var (
	// kmsgStamp is the kernel's time stamp at a console line's start.
	kmsgStamp = regexp.MustCompile(`^\s*\[\s*\d+\.\d+\]\s?`)
	// oopsLine starts the kernel's report of a fault.
	oopsLine = regexp.MustCompile(`^(Oops: |BUG: |kernel BUG at |general protection fault|Unable to handle kernel|watchdog: BUG: )`)
	// moduleFrame is a call trace frame in a module: "fn+0x../0x.. [mod]".
	moduleFrame = regexp.MustCompile(`^\s*(\? )?([A-Za-z0-9_.]+\+0x[0-9a-f]+/0x[0-9a-f]+) \[([a-z0-9_]+)\]$`)
)

// PanicSummary reads a guest's last console lines for a kernel panic and
// says, on one line: the oops, the function it happened in (RIP), the
// innermost call trace frame in a module, and the panic line. "" when the
// lines hold no panic. Console text is the guest's: every part is cut and
// made safe for a terminal.
func PanicSummary(lines []string) string {
	var oops, rip, frame, panicked string
	for _, l := range lines {
		l = strings.TrimRight(kmsgStamp.ReplaceAllString(l, ""), " \r")
		switch {
		case oops == "" && oopsLine.MatchString(l):
			oops = l
		case oops != "" && rip == "" && strings.HasPrefix(l, "RIP: "):
			rip = strings.TrimSpace(l[strings.Index(l, ":")+1:])
			if _, fn, ok := strings.Cut(rip, ":"); ok && !strings.Contains(fn, " ") {
				rip = fn // "0010:kmem_cache_alloc_node_noprof+0x6e/0x310"
			}
		case oops != "" && frame == "" && moduleFrame.MatchString(l):
			if m := moduleFrame.FindStringSubmatch(l); m[1] == "" {
				frame = m[2] + " [" + m[3] + "]"
			}
		case panicked == "" && strings.HasPrefix(l, "Kernel panic - not syncing"):
			panicked = l
		}
	}
	if oops == "" && panicked == "" {
		return ""
	}
	cut := func(s string) string { return clip(termsafe.Line(s), 200) }
	var b strings.Builder
	if oops != "" {
		b.WriteString(cut(oops))
		if rip != "" {
			b.WriteString(" in " + cut(rip))
		}
		if frame != "" {
			b.WriteString(", called from " + cut(frame))
		}
	}
	if panicked != "" {
		if b.Len() > 0 {
			b.WriteString(" (" + cut(panicked) + ")")
		} else {
			b.WriteString(cut(panicked))
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
