package perftest

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/toolout"
)

// perftest's text report is a header block of "Key : value" pairs (two to a
// line, separated by tabs, sometimes with a tab inside the key), the local and
// remote QP addresses, then a table: a "#bytes ..." header naming columns
// with their units in brackets and one row per message size (several with
// -a). Rows mix tabs and spaces and the precision of the BW columns varies
// between builds, so columns are found by name, not position.

// headerPair matches one "Key : value" pair of the header block.
var headerPair = regexp.MustCompile(`([A-Za-z][A-Za-z0-9_ .*/()-]*?)[ \t]*:[ \t]*(\S+)`)

// mibToGbit converts perftest's MB/sec (2^20 bytes per second) to Gb/s.
const mibToGbit = 1048576 * 8 / 1e9

// mibUnit reports whether a bandwidth unit is perftest's 2^20 bytes per
// second: "MB/sec" until 2024, "MiB/sec" since (perftest commit 1d202bb,
// "Display proper unit for MiB/sec results", first in 24.07.0): the same
// number under a truer name.
func mibUnit(u string) bool { return u == "MB/sec" || u == "MiB/sec" }

// ignoredColumns are table columns perftest prints that hold no metric of
// the vocabulary: known, so not reported as unread.
func ignoredColumn(name string) bool {
	switch name {
	case "#sl", "CPU_Util", "tps average", "BW Port1", "BW Port2", "MsgRate Port1", "MsgRate Port2":
		return true
	}
	return false
}

type column struct {
	name string // without the unit: "BW average", "t_min", "99% percentile"
	unit string // inside the brackets: "Gb/sec", "MB/sec", "usec", "Mpps"
}

// perftestColumns maps a column name to the metric it holds.
var perftestColumns = map[string]string{
	"BW peak":          "bw_peak",
	"BW average":       "bw_avg",
	"MsgRate":          "msg_rate",
	"t_min":            "lat_min",
	"t_max":            "lat_max",
	"t_typical":        "lat_typical",
	"t_avg":            "lat_avg",
	"t_stdev":          "lat_stdev",
	"99% percentile":   "lat_p99",
	"99.9% percentile": "lat_p999",
}

func parsePerftestText(b []byte) ([]toolout.Row, toolout.Info, error) {
	info := toolout.Info{Source: "text"}
	lines := toolout.SplitLines(b)
	var (
		cols     []column // the main table's
		cur      []column // the table rows are read against now
		rows     []toolout.Row
		inHeader bool
		gidFor   *string // which GID the next "GID:" line is
		// section is "" for the main table, "local" or "remote" after the
		// headings perftest prints with -b --report-both.
		section string
		inHist  bool
	)
	warn := func(t string) { info.Warnings = append(info.Warnings, t) }
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "---"):
			continue
		case t == "Local results:" || t == "Remote results:":
			section = strings.ToLower(strings.TrimSuffix(t, " results:"))
			continue
		case strings.HasPrefix(t, "#bytes"):
			c, notes, err := tableColumns(t)
			if err != nil {
				return nil, info, err
			}
			if cols == nil {
				cols = c
				if mibUnit(cols[0].unit) || cols[0].unit == "Gb/sec" {
					info.BWUnit = cols[0].unit
				}
				info.Warnings = append(info.Warnings, notes...)
			}
			cur, inHeader, inHist = c, false, false
			continue
		case t == "#, usec" || t == "#, cycles":
			inHist = true // -H / -U: one "N, latency" line per iteration follows
			continue
		case inHist && histLine.MatchString(t):
			info.HistogramLines++
			continue
		case cur != nil:
			r, ok, err := tableRow(t, cur)
			if err != nil {
				return nil, info, err
			}
			info.Warnings = append(info.Warnings, r.Notes...)
			switch {
			case !ok:
				warn(t)
			case section != "":
				info.PerDirection = append(info.PerDirection, directionOf(section, r))
			default:
				rows = append(rows, r)
			}
			if n := len(rows) + len(info.PerDirection); n > toolout.MaxRows {
				return nil, info, toolout.TooManyRows(n)
			}
			continue
		case strings.HasSuffix(t, " Test") && !strings.Contains(t, ":"):
			info.Test = t
			info.Bidirectional = strings.Contains(t, "Bidirectional")
			inHeader = true
			continue
		case strings.HasPrefix(t, "local address:"):
			inHeader = false
			if info.LocalGID == "" {
				gidFor = &info.LocalGID
			}
			continue
		case strings.HasPrefix(t, "remote address:"):
			if info.RemoteGID == "" {
				gidFor = &info.RemoteGID
			}
			continue
		case strings.HasPrefix(t, "GID:") || strings.HasPrefix(t, "MGID:"):
			// the GID of the address line above, as perftest prints it:
			// 16 decimal-or-hex bytes "00:...:255:255:10:99:00:02"
			if gidFor != nil && *gidFor == "" && strings.HasPrefix(t, "GID:") {
				*gidFor = strings.TrimSpace(strings.TrimPrefix(t, "GID:"))
			}
			gidFor = nil
			continue
		case strings.HasPrefix(t, "*") || perftestBanner(t):
			continue // "Waiting for client to connect..." and the like
		}
		if inHeader && !isPerftestWarning(t) {
			pairs := headerPair.FindAllStringSubmatch(l, -1)
			for _, m := range pairs {
				headerFact(&info, m[1], m[2])
			}
			if len(pairs) > 0 {
				continue
			}
		}
		// a line perftest printed that this parser does not read: kept,
		// so that nothing it said is silently dropped
		warn(t)
	}
	if cols == nil {
		return nil, info, fmt.Errorf("no result table (no \"#bytes\" header line)%s", toolout.FailHint(lines, info.Warnings))
	}
	if len(rows) == 0 {
		return nil, info, fmt.Errorf("result table has no rows%s", toolout.ErrorHint(lines))
	}
	markIntervals(rows)
	if info.Bidirectional {
		for i := range rows {
			if rows[i].Extra == nil {
				rows[i].Extra = map[string]string{}
			}
			rows[i].Extra["bidirectional"] = "sum of both directions"
		}
	}
	dropUnmeasuredPeak(rows, &info)
	for _, r := range rows {
		if len(r.Values) > 0 {
			return rows, info, nil
		}
	}
	// Every figure was dropped (a -D run's one row gone negative): no
	// measurement, so the run failed, in the parser's words.
	return nil, info, fmt.Errorf("no figure of the result table could be kept: %s", strings.Join(info.Warnings, "; "))
}

// histLine is one latency of perftest's -H/-U listing ("17, 2.345").
var histLine = regexp.MustCompile(`^[0-9]+, [0-9.eE+-]+$`)

// markIntervals numbers the rows of a message size that the table holds more
// than once: perftest --run_infinitely prints a row per interval (every -D
// seconds, print_bw_infinite_mode) under one header, and each row is a
// measurement of that interval alone. A sweep (-a) has each size once.
func markIntervals(rows []toolout.Row) {
	n := map[int64]int{}
	for _, r := range rows {
		n[r.Size]++
	}
	seen := map[int64]int{}
	for i, r := range rows {
		if n[r.Size] < 2 {
			continue
		}
		seen[r.Size]++
		rows[i].Interval = seen[r.Size]
	}
}

// perftestBanner tells the progress lines perftest prints between its header
// and its table (the rdma_cm server's), which say nothing about the results.
func perftestBanner(t string) bool {
	return strings.HasPrefix(t, "Waiting for client rdma_cm QP to connect") ||
		strings.HasPrefix(t, "Please run the same command with the IB/RoCE interface IP")
}

// directionOf turns a row of a --report-both table into a toolout.DirectionResult.
func directionOf(section string, r toolout.Row) toolout.DirectionResult {
	d := toolout.DirectionResult{Direction: section, Size: r.Size}
	for _, v := range r.Values {
		switch v.Metric {
		case "bw_avg":
			d.BWAvgGbps = v.Value
		case "msg_rate":
			d.MsgRateMpps = v.Value
		}
	}
	return d
}

// dropUnmeasuredPeak removes "BW peak" values of 0 beside a non-zero
// average: perftest prints 0 when it did not measure the peak (the passive
// side of send, -D runs, several QPs), and a 0 recorded as a measurement would
// fail expects and comparisons for no reason.
func dropUnmeasuredPeak(rows []toolout.Row, info *toolout.Info) {
	dropped := false
	for i, r := range rows {
		var peak, avg = -1.0, -1.0
		for _, v := range r.Values {
			switch v.Metric {
			case "bw_peak":
				peak = v.Value
			case "bw_avg":
				avg = v.Value
			}
		}
		// avg is -1 when the row has none: dropped as negative (tableRow),
		// and a peak of 0 beside it measured nothing either.
		if peak != 0 || avg == 0 {
			continue
		}
		kept := r.Values[:0:0]
		for _, v := range r.Values {
			if v.Metric != "bw_peak" {
				kept = append(kept, v)
			}
		}
		rows[i].Values = kept
		dropped = true
	}
	if dropped {
		info.Warnings = append(info.Warnings, "BW peak reported as 0 (not measured on this side or in this mode): no bw_peak sample")
	}
}

// isPerftestWarning tells the lines perftest prints around its report that
// are worth keeping (skipping banners like "Waiting for client to connect").
func isPerftestWarning(t string) bool {
	lt := strings.ToLower(t)
	for _, s := range []string{"warning", "correlation coefficient", "not recognized", "error", "fail", "couldn't", "unable"} {
		if strings.Contains(lt, s) {
			return true
		}
	}
	return false
}

func headerFact(info *toolout.Info, key, val string) {
	k := strings.ToLower(strings.Join(strings.Fields(key), " "))
	switch k {
	case "device":
		info.Device = val
	case "transport type":
		info.Transport = val
	case "connection type":
		info.Connection = val
	case "mtu":
		if n, err := strconv.Atoi(leadingDigits(val)); err == nil {
			info.MTU = n
		}
	case "link type":
		info.LinkType = val
	case "gid index":
		if n, err := strconv.Atoi(val); err == nil {
			info.GIDIndex = &n
		}
	case "number of qps":
		if n, err := strconv.Atoi(val); err == nil {
			info.QPs = n
		}
	case "rdma_cm qps":
		info.RDMACM = strings.EqualFold(val, "ON")
	case "data ex. method":
		info.DataExchg = val
	}
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// tableColumns splits a table header into named columns. A name runs over
// several words until the one carrying the unit ("BW peak[Gb/sec]",
// "99% percentile[usec]"); "#bytes", "#iterations" and "#sl" stand alone.
// cols[0] is "#bytes"; its unit is set to the table's bandwidth unit, if any,
// so each row knows how to convert. notes are the header's oddities, for the
// warnings: a column no metric is read from, a name run into the next one.
func tableColumns(h string) (cols []column, notes []string, err error) {
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		name := strings.Join(cur, " ")
		c := column{name: name}
		if i := strings.IndexByte(name, '['); i >= 0 && strings.HasSuffix(name, "]") {
			c.name, c.unit = name[:i], name[i+1:len(name)-1]
		}
		cols = append(cols, splitRunOn(c, &notes)...)
		cur = nil
	}
	for _, f := range strings.Fields(h) {
		if strings.HasPrefix(f, "#") {
			flush()
			cols = append(cols, column{name: f})
			continue
		}
		cur = append(cur, f)
		if strings.Contains(f, "]") {
			flush()
		}
	}
	flush()
	if len(cols) < 3 || cols[0].name != "#bytes" {
		return nil, nil, fmt.Errorf("result table header %q not understood", h)
	}
	known := false
	for i, c := range cols {
		if c.name == "BW average" {
			cols[0].unit = c.unit
			if c.unit != "Gb/sec" && !mibUnit(c.unit) {
				return nil, nil, fmt.Errorf("bandwidth unit %q in column %d not understood", c.unit, i+1)
			}
		}
		m, ok := perftestColumns[c.name]
		switch {
		case ok:
			known = true
			if strings.HasPrefix(m, "lat_") && c.unit != "usec" {
				return nil, nil, fmt.Errorf("latency column %q is in %q, not usec (drop --report-cycles)", c.name, c.unit)
			}
		case i > 0 && c.name != "#iterations" && !ignoredColumn(c.name):
			notes = append(notes, fmt.Sprintf("result table column %q not read", c.name))
		}
	}
	if !known {
		return nil, nil, fmt.Errorf("result table header %q has no bandwidth or latency column", h)
	}
	return cols, notes, nil
}

// splitRunOn undoes a header whose "#" was lost before a one-word column, so
// that the word ran into the next name ("iterations BW peak[MB/sec]", seen in
// openucx/ucx issue 8852): the known name at the end is kept, each word
// before it becomes a column of its own, and a note says so. Any other name
// is returned as it is.
func splitRunOn(c column, notes *[]string) []column {
	if _, ok := perftestColumns[c.name]; ok || ignoredColumn(c.name) {
		return []column{c}
	}
	words := strings.Fields(c.name)
	for i := 1; i < len(words); i++ {
		tail := strings.Join(words[i:], " ")
		if _, ok := perftestColumns[tail]; !ok && !ignoredColumn(tail) {
			continue
		}
		var (
			out   []column
			names []string
		)
		for _, w := range words[:i] {
			if w == "bytes" || w == "iterations" {
				w = "#" + w
			}
			out = append(out, column{name: w})
			names = append(names, strconv.Quote(w))
		}
		*notes = append(*notes, fmt.Sprintf("result table header: %q read as %s and %q", c.name, strings.Join(names, ", "), tail))
		return append(out, column{name: tail, unit: c.unit})
	}
	return []column{c}
}

var errRowShape = errors.New("row shape")

// tableRow reads one table row. ok is false for a line that is not a row (a
// separator, a warning printed after the table). r.Notes says which values
// of the row were left out and why: a negative figure, which perftest
// prints when a counter overflowed on a long run (perftest issue #82,
// "Negative value of BW average and t_avg", 5.60 with -D 205200), is no
// measurement, but the row's other figures and the other rows still are.
func tableRow(t string, cols []column) (r toolout.Row, ok bool, err error) {
	f := strings.Fields(t)
	if len(f) == 0 {
		return toolout.Row{}, false, nil
	}
	if _, err := strconv.ParseUint(f[0], 10, 63); err != nil {
		return toolout.Row{}, false, nil
	}
	if len(f) < len(cols) {
		// perftest prints every column it announced; a short row is a
		// truncated output (the process died mid-line).
		if len(f) < 3 {
			return toolout.Row{}, false, nil
		}
		return toolout.Row{}, false, fmt.Errorf("result row %q has %d columns, header has %d", t, len(f), len(cols))
	}
	for i, c := range cols {
		v := f[i]
		switch c.name {
		case "#bytes":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return toolout.Row{}, false, fmt.Errorf("result row %q: size %q: %w", t, v, errRowShape)
			}
			r.Size = n
			continue
		case "#iterations":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return toolout.Row{}, false, fmt.Errorf("result row %q: iterations %q: %w", t, v, errRowShape)
			}
			r.Iters = n
			continue
		}
		m, ok := perftestColumns[c.name]
		if !ok {
			continue // #sl, CPU_Util, per-port columns, tps average
		}
		if notANumber(v) {
			// perftest prints sqrt of a variance that rounding made
			// negative as "-nan" (seen: t_stdev of ib_write_lat on a
			// loaded TCG guest); the other columns are good.
			r.Notes = append(r.Notes, fmt.Sprintf("result row %q: column %q is %q: no %s sample for this row", t, c.name, v, m))
			continue
		}
		if neg, err := strconv.ParseFloat(v, 64); err == nil && neg < 0 && neg > -1e300 {
			r.Notes = append(r.Notes, fmt.Sprintf("result row %q: %s is negative (%s), a counter overflow of perftest: no %s sample at %d bytes", strings.Join(f, " "), c.name, v, m, r.Size))
			continue
		}
		x, err := toolout.ParseNumber(v)
		if err != nil {
			return toolout.Row{}, false, fmt.Errorf("result row %q: column %q: %w", t, c.name, err)
		}
		if mibUnit(c.unit) {
			x *= mibToGbit
		}
		r.Values = append(r.Values, toolout.Value{Metric: m, Value: x})
	}
	if cols[0].unit != "" {
		r.Extra = map[string]string{"reported_unit": cols[0].unit}
	}
	return r, true, nil
}

// notANumber says whether a cell is C's printf of a NaN or an infinity
// ("nan", "-nan", "inf", "-inf" and their capitals).
func notANumber(v string) bool {
	switch strings.ToLower(strings.TrimLeft(v, "+-")) {
	case "nan", "inf", "infinity":
		return true
	}
	return false
}

// parse reads one run of a perftest tool: its text report, or with
// opts.JSON the content of its --out_json file.
//
// A run that printed rows and then failed (a sweep's "Completion with error"
// / "Failed status N" on stdout or stderr, from a ConnectX-3 in the wild)
// is not a success: its rows come back with a *toolout.PartialError.
func parse(stdout []byte, opts toolout.Options) ([]toolout.Row, toolout.Info, error) {
	var (
		rows []toolout.Row
		info toolout.Info
		err  error
	)
	if opts.JSON {
		rows, info, err = parsePerftestJSON(stdout, opts.ReportGbits)
	} else {
		rows, info, err = parsePerftestText(stdout)
	}
	if err != nil || len(rows) == 0 {
		return rows, info, err
	}
	lines := toolout.SplitLines(opts.Stderr)
	if !opts.JSON {
		lines = append(toolout.SplitLines(stdout), lines...)
	}
	if why := toolout.RunFailure(lines); why != "" {
		return rows, info, &toolout.PartialError{Rows: len(rows), Reason: why}
	}
	return rows, info, nil
}
