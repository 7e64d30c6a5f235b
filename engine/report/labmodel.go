package report

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// loadLab loads the lab files kept in the run directory, for what only the
// lab knows (a workload's sizes and options, a capture's filter). Nil when
// they do not load on their own (a variable without a default).
func (b *builder) loadLab() {
	if b.opts.Lab != nil {
		b.model = b.opts.Lab
		return
	}
	if !b.hasLabDir() {
		return
	}
	dir := filepath.Join(b.dir, "lab")
	if b.opts.Guard != nil {
		stop := b.opts.Guard(dir)
		defer stop()
	}
	l, diags := lab.Load([]string{dir}, lab.LoadOptions{Confined: true})
	if l != nil && !diags.HasErrors() {
		b.model = l
	}
}

// redactor replaces the lab's sensitive values with "(sensitive)", as the
// run engine does in its own files; nil without a lab model.
// Made once (redactOnce): the captures' goroutines ask for it together
// (captures), and in a run directory without its lab nothing asked before.
func (b *builder) redactor() *lab.Replacer {
	b.redactOnce.Do(func() {
		if b.model == nil {
			b.redact = lab.NewReplacer(nil, "")
		} else {
			b.redact = lab.Redactor(b.model.Sensitive)
		}
	})
	return b.redact
}

func (b *builder) hasLabDir() bool {
	for _, f := range b.all {
		if strings.HasPrefix(f.Path, "lab/") {
			return true
		}
	}
	return false
}

// workloadConfig says how the lab asked a workload to run.
func workloadConfig(w *lab.Workload) string {
	var p []string
	if len(w.Sizes) > 0 {
		var s []string
		for _, sz := range w.Sizes {
			s = append(s, strconv.FormatInt(sz, 10))
		}
		p = append(p, "sizes "+strings.Join(s, ", "))
	}
	if w.Iterations > 0 {
		p = append(p, fmt.Sprintf("iterations %d", w.Iterations))
	}
	if w.Duration > 0 {
		p = append(p, "duration "+w.Duration.String())
	}
	if w.QPs > 0 {
		p = append(p, fmt.Sprintf("QPs %d", w.QPs))
	}
	if w.Transport != "" {
		p = append(p, "transport "+w.Transport)
	}
	if w.Bytes > 0 {
		p = append(p, "bytes "+humanBytes(w.Bytes))
	}
	if len(w.Command) > 0 {
		p = append(p, "command "+strings.Join(w.Command, " "))
	}
	if len(w.Args) > 0 {
		p = append(p, "extra args "+strings.Join(w.Args, " "))
	}
	if w.Repeat > 0 {
		p = append(p, fmt.Sprintf("repeat %d", w.Repeat))
	}
	if w.Timeout > 0 {
		p = append(p, "timeout "+w.Timeout.String())
	}
	return strings.Join(p, " · ")
}

// captureConfig says what a capture was told to take. name is the file's
// stem without "cap.": the capture's slug, then ".<window>" when scoped.
func (b *builder) captureConfig(name string) string {
	if b.model == nil {
		return ""
	}
	var c *lab.Capture
	for _, x := range b.model.Captures {
		if name == x.Slug || strings.HasPrefix(name, x.Slug+".") {
			if c == nil || len(x.Slug) > len(c.Slug) {
				c = x
			}
		}
	}
	if c == nil {
		return ""
	}
	p := []string{fmt.Sprintf("tcpdump on %s of host %s", c.Netdev, c.Host.Name)}
	if c.Filter != "" {
		p = append(p, "filter "+strconv.Quote(c.Filter))
	}
	p = append(p, fmt.Sprintf("snaplen %d", c.Snaplen), "max size "+humanBytes(c.MaxBytes))
	if len(c.During) > 0 {
		var ws []string
		for _, w := range c.During {
			ws = append(ws, w.Name)
		}
		p = append(p, "during "+strings.Join(ws, ", "))
	} else {
		p = append(p, "for the whole run on its host")
	}
	return strings.Join(p, " · ")
}
