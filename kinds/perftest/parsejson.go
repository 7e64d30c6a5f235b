package perftest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/toolout"
)

// perftest --out_json writes {"test_info": {...}, "results": {...}}. Before
// perftest PR #239 (2024) keys and strings were unquoted and objects ended
// with a trailing comma, so distro packages still in use write files no JSON
// decoder accepts. Both are read here: strictly first, then with a lenient
// reader of that broken dialect. Only the last message size survives a -a
// sweep (the file is truncated per report), and the file does not say its
// bandwidth unit, so the caller passes --report_gbits in toolout.Options.

// jsonMetrics maps perftest's JSON result keys (lower-cased) to metrics.
var jsonMetrics = map[string]string{
	"bw_peak":         "bw_peak",
	"bw_average":      "bw_avg",
	"msgrate":         "msg_rate",
	"t_min":           "lat_min",
	"t_max":           "lat_max",
	"t_typical":       "lat_typical",
	"t_avg":           "lat_avg",
	"t_stdev":         "lat_stdev",
	"percentile_99":   "lat_p99",
	"percentile_99.9": "lat_p999",
}

// maxJSONMembers bounds the members (and the objects and list elements)
// of an --out_json file, which is read into maps: perftest writes about
// 50, and the file (up to proto.OutputLimit, 1 MiB) is the host's, whose
// "k":0 members cost some 50 times their text as maps.
const maxJSONMembers = 10_000

func parsePerftestJSON(b []byte, gbits bool) ([]toolout.Row, toolout.Info, error) {
	info := toolout.Info{Source: "json", BWUnit: "MB/sec"}
	if gbits {
		info.BWUnit = "Gb/sec"
	}
	if n := proto.CountMembers(b, true, maxJSONMembers); n > maxJSONMembers {
		return nil, info, fmt.Errorf("%w: more than %d members, perftest writes about 50", toolout.ErrUnusableJSON, maxJSONMembers)
	}
	if err := proto.CheckValues(b, maxJSONMembers); err != nil {
		return nil, info, fmt.Errorf("%w: %v", toolout.ErrUnusableJSON, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		v, lerr := parseLenient(string(b))
		m, ok := v.(map[string]any)
		if lerr != nil || !ok {
			if lerr == nil {
				lerr = fmt.Errorf("top level is not an object")
			}
			return nil, info, fmt.Errorf("%w: %v (lenient reading: %v)", toolout.ErrUnusableJSON, err, lerr)
		}
		doc = m
		info.Warnings = append(info.Warnings, "perftest --out_json file is not valid JSON (perftest before 2024); read leniently")
	}
	// Keys are taken in sorted order: a key spelled twice in two cases
	// (lookup and the metrics are case-blind) reads the same every time.
	ti, _ := lookup(doc, "test_info").(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(ti)) {
		jsonFact(&info, k, ti[k])
	}
	var objs []map[string]any
	switch r := lookup(doc, "results").(type) {
	case map[string]any:
		objs = append(objs, r)
	case []any:
		for _, e := range r {
			if m, ok := e.(map[string]any); ok {
				objs = append(objs, m)
			}
		}
	default:
		return nil, info, fmt.Errorf("%w: no \"results\" object", toolout.ErrUnusableJSON)
	}
	var rows []toolout.Row
	for _, o := range objs {
		var r toolout.Row
		for _, k := range slices.Sorted(maps.Keys(o)) {
			v, lk := o[k], strings.ToLower(k)
			switch lk {
			case "msgsize":
				n, ok := jsonInt(v)
				if !ok {
					return nil, info, fmt.Errorf("%w: MsgSize %v is not an integer", toolout.ErrUnusableJSON, v)
				}
				r.Size = n
				continue
			case "n_iterations":
				if n, ok := jsonInt(v); ok {
					r.Iters = n
				}
				continue
			}
			m, ok := jsonMetrics[lk]
			if !ok {
				continue
			}
			x, ok := jsonFloat(v)
			if !ok || x < 0 {
				return nil, info, fmt.Errorf("%w: %s = %v is not a number", toolout.ErrUnusableJSON, k, v)
			}
			if (m == "bw_peak" || m == "bw_avg") && !gbits {
				x *= mibToGbit
			}
			if i := slices.IndexFunc(r.Values, func(mv toolout.Value) bool { return mv.Metric == m }); i >= 0 {
				r.Values[i].Value = x // the same figure spelled twice: one value, the last key's
				continue
			}
			r.Values = append(r.Values, toolout.Value{Metric: m, Value: x})
		}
		if len(r.Values) == 0 {
			continue
		}
		sortValues(r.Values)
		if lk := info.BWUnit; hasBW(r.Values) {
			r.Extra = map[string]string{"reported_unit": lk}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, info, fmt.Errorf("%w: \"results\" holds no bandwidth or latency figure", toolout.ErrUnusableJSON)
	}
	if !hasBWRows(rows) {
		info.BWUnit = ""
	}
	// -b: the figures are the sum of both directions, as in the text table
	if info.Bidirectional = strings.Contains(info.Test, "Bidirectional"); info.Bidirectional {
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
	// Only a peak of 0 (not measured) was there: no measurement, as in the
	// text table (found by FuzzPerftestJSON: {"results":{"BW_peak":0}}).
	return nil, info, fmt.Errorf("%w: \"results\" holds only a BW peak of 0 (not measured), no figure", toolout.ErrUnusableJSON)
}

func hasBW(vs []toolout.Value) bool {
	for _, v := range vs {
		if v.Metric == "bw_avg" || v.Metric == "bw_peak" {
			return true
		}
	}
	return false
}

func hasBWRows(rows []toolout.Row) bool {
	for _, r := range rows {
		if hasBW(r.Values) {
			return true
		}
	}
	return false
}

// sortValues orders a row's metrics as the metric table does, so output is
// deterministic whatever order the map iteration gave.
func sortValues(vs []toolout.Value) {
	order := map[string]int{}
	i := 0
	for _, m := range []string{"bw_peak", "bw_avg", "msg_rate", "lat_min", "lat_max", "lat_typical", "lat_avg", "lat_stdev", "lat_p99", "lat_p999"} {
		order[m] = i
		i++
	}
	for a := 1; a < len(vs); a++ {
		for b := a; b > 0 && order[vs[b].Metric] < order[vs[b-1].Metric]; b-- {
			vs[b], vs[b-1] = vs[b-1], vs[b]
		}
	}
}

func lookup(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.EqualFold(k, key) {
			return m[k]
		}
	}
	return nil
}

func jsonFact(info *toolout.Info, k string, v any) {
	s := jsonString(v)
	switch strings.ToLower(k) {
	case "test":
		info.Test = s
	case "device":
		info.Device = s
	case "transport_type":
		info.Transport = s
	case "connection_type":
		info.Connection = s
	case "mtu":
		if n, err := strconv.Atoi(leadingDigits(s)); err == nil {
			info.MTU = n
		}
	case "link_type":
		info.LinkType = s
	case "gid_index":
		if n, err := strconv.Atoi(s); err == nil {
			info.GIDIndex = &n
		}
	case "number_of_qps":
		if n, err := strconv.Atoi(s); err == nil {
			info.QPs = n
		}
	case "rdma_cm_qps":
		info.RDMACM = strings.EqualFold(s, "ON")
	case "data_ex_method":
		info.DataExchg = s
	}
}

func jsonString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func jsonFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, x == x && x < 1e300 && x > -1e300
	case string:
		f, err := toolout.ParseNumber(strings.TrimSpace(x))
		return f, err == nil
	}
	return 0, false
}

func jsonInt(v any) (int64, bool) {
	f, ok := jsonFloat(v)
	if !ok || f < 0 || f > 1<<53 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// parseLenient reads the JSON-like dialect of old perftest: objects and
// arrays as in JSON, keys and string values possibly unquoted (a bare value
// runs to the next comma, closing bracket or line end), trailing commas
// allowed. Bare values that parse as numbers become float64.
func parseLenient(s string) (any, error) {
	p := &lenient{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("offset %d: trailing data", p.i)
	}
	return v, nil
}

type lenient struct {
	s string
	i int
}

const maxDepth = 32

func (p *lenient) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *lenient) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("offset %d: nested too deep", p.i)
	}
	p.ws()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("offset %d: value expected, end of input", p.i)
	}
	switch p.s[p.i] {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		return p.str()
	case '}', ']', ',', ':':
		return nil, fmt.Errorf("offset %d: value expected, %q found", p.i, p.s[p.i])
	}
	start := p.i
	open := 0 // a bare value may hold a unit in brackets: "Mtu: 1024[B],"
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == ',' || c == '}' || c == '\n' || (c == ']' && open == 0) {
			break
		}
		if c == '[' {
			open++
		} else if c == ']' {
			open--
		}
		p.i++
	}
	w := strings.TrimSpace(p.s[start:p.i])
	if w == "" {
		return nil, fmt.Errorf("offset %d: empty value", start)
	}
	if f, err := strconv.ParseFloat(w, 64); err == nil {
		return f, nil
	}
	return w, nil
}

func (p *lenient) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			raw := p.s[start:p.i]
			if u, err := strconv.Unquote(raw); err == nil {
				return u, nil
			}
			return raw[1 : len(raw)-1], nil
		}
		p.i++
	}
	return "", fmt.Errorf("offset %d: unterminated string", start)
}

func (p *lenient) object(depth int) (any, error) {
	p.i++ // {
	m := map[string]any{}
	for {
		p.ws()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("offset %d: unterminated object", p.i)
		}
		if p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		var key string
		if p.s[p.i] == '"' {
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			key = k
		} else {
			start := p.i
			for p.i < len(p.s) && strings.IndexByte(":{}[],\n", p.s[p.i]) < 0 {
				p.i++
			}
			key = strings.TrimSpace(p.s[start:p.i])
			if key == "" {
				return nil, fmt.Errorf("offset %d: key expected", start)
			}
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, fmt.Errorf("offset %d: ':' expected after key %q", p.i, key)
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		return nil, fmt.Errorf("offset %d: ',' or '}' expected", p.i)
	}
}

func (p *lenient) array(depth int) (any, error) {
	p.i++ // [
	var a []any
	for {
		p.ws()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("offset %d: unterminated array", p.i)
		}
		if p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		return nil, fmt.Errorf("offset %d: ',' or ']' expected", p.i)
	}
}
