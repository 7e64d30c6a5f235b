package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Decode reads a results.json document of any version this rlab knows
// (1, and 0 for a document without "schema") into the current Run: the one
// reader of the format, used by ReadRun and the report alike. A newer
// version is an error naming it. A document whose workloads, samples or
// students outnumber MaxWorkloads, MaxSamples or MaxStudents is refused
// before they are built (a received run directory: a few MB of "{}" cost
// gigabytes once decoded and shown).
func Decode(b []byte) (*Run, error) {
	if err := checkCounts(b); err != nil {
		return nil, err
	}
	var head struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	if head.Schema > SchemaVersion {
		return nil, fmt.Errorf("schema %d, this rlab reads up to %d (upgrade rlab)", head.Schema, SchemaVersion)
	}
	if head.Schema < 2 {
		up, err := upgradeV1(b)
		if err != nil {
			return nil, fmt.Errorf("schema %d: %w", head.Schema, err)
		}
		b = up
		if err := checkCounts(b); err != nil { // what the upgrade made
			return nil, err
		}
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	uniqueLogs(&r)
	for i := range r.Samples {
		switch k := SourceOf(r.Samples[i]); k {
		case SourceTool, SourceCounter:
			r.Samples[i].Source = k
		default:
			return nil, fmt.Errorf("sample %d (%s): kind %q is neither %q nor %q", i, r.Samples[i].Metric, k, SourceTool, SourceCounter)
		}
	}
	return &r, nil
}

// upgradeV1 rewrites a version 1 document as version 2: each sample's
// metadata.platforms (one per host, repeated in every sample) become the
// run's platforms keyed by host, samples get their kind, and the numbers
// version 1 kept as text in metadata.extra (tcp's bytes and server_bytes,
// perftest's interval, impair_loss) become numbers of their own.
func upgradeV1(b []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	if doc == nil {
		doc = map[string]json.RawMessage{} // the document "null"
	}
	var samples []map[string]any
	if raw, ok := doc["samples"]; ok && string(raw) != "null" {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&samples); err != nil {
			return nil, fmt.Errorf("samples: %w", err)
		}
	}
	platforms := map[string]any{}
	for _, s := range samples {
		meta, _ := s["metadata"].(map[string]any)
		if meta == nil {
			continue
		}
		if ps, ok := meta["platforms"].([]any); ok {
			hosts, _ := meta["hosts"].([]any)
			for i, p := range ps {
				pm, _ := p.(map[string]any)
				if pm == nil {
					continue
				}
				host, _ := pm["host"].(string)
				if host == "" && i < len(hosts) {
					host, _ = hosts[i].(string)
				}
				delete(pm, "host")
				if _, seen := platforms[host]; host != "" && !seen {
					platforms[host] = pm
				}
			}
		}
		delete(meta, "platforms")
		extra, _ := meta["extra"].(map[string]any)
		if _, ok := s["kind"]; !ok {
			s["kind"] = SourceTool
			if c, _ := extra[CounterExtra].(string); c != "" {
				s["kind"] = SourceCounter
			}
		}
		for key, isInt := range map[string]bool{"bytes": true, "server_bytes": true, "interval": true, "impair_loss": false} {
			v, ok := extra[key].(string)
			if !ok {
				continue
			}
			if isInt {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					meta[key] = n
					delete(extra, key)
				}
			} else if f, err := strconv.ParseFloat(v, 64); err == nil {
				meta[key] = f
				delete(extra, key)
			}
		}
		if extra != nil && len(extra) == 0 {
			delete(meta, "extra")
		}
	}
	if samples != nil {
		raw, err := json.Marshal(samples)
		if err != nil {
			return nil, err
		}
		doc["samples"] = raw
	}
	if len(platforms) > 0 {
		raw, err := json.Marshal(platforms)
		if err != nil {
			return nil, err
		}
		doc["platforms"] = raw
	}
	doc["schema"] = json.RawMessage(strconv.Itoa(SchemaVersion))
	return json.Marshal(doc)
}

// What Decode reads at most: far past any run's (a lab block has at most
// 10,000 instances; a sweep a few hundred samples per workload).
const (
	MaxWorkloads = 20_000
	MaxSamples   = 500_000
	MaxStudents  = 10_000
	// MaxArtifacts: a run pulls at most 100,000 files from a host; a
	// million is a class of hosts each with ten times a small run's.
	MaxArtifacts = 1_000_000
	// MaxLogs bounds the workloads' logs lists, all together.
	MaxLogs = 1_000_000
	// MaxNested bounds the elements of every array inside the top-level
	// ones (a workload's logs, expects, hosts; a sample's hosts and
	// devices; a student's lists), all together, and MaxNestedObjects
	// those of them that are objects (expects, notes): a run at the other
	// limits holds about 3,000,000 and 100,000.
	MaxNested        = 4_000_000
	MaxNestedObjects = 500_000
	// MaxPlatforms bounds Run.Platforms, one per host, and MaxMapMembers
	// the members of the workloads' thresholds and the samples' extra,
	// all together (a sample has one to five): a map decodes each member
	// into a key and a value of its own, 20 to 50 times the text of
	// "k":null, and the counts above see no members.
	MaxPlatforms  = 100_000
	MaxMapMembers = 2_000_000
)

// checkCounts refuses a document whose top-level workloads, samples,
// students or artifacts arrays hold more than their limit, counting
// without building.
func checkCounts(b []byte) error {
	var top struct {
		Schema                                  int
		Workloads, Samples, Students, Artifacts json.RawMessage
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	if top.Schema < 2 {
		// upgradeV1 reads the document's members, and every member of
		// its samples, into maps.
		if n := proto.CountMembers(b, false, MaxMapMembers) + proto.CountMembers(top.Samples, true, MaxMapMembers); n > MaxMapMembers {
			return fmt.Errorf("a version 1 document of more than %d members at the top and in samples, more than any run writes: refusing to read it", MaxMapMembers)
		}
	}
	for _, a := range []struct {
		key string
		raw json.RawMessage
		max int
	}{{"workloads", top.Workloads, MaxWorkloads}, {"samples", top.Samples, MaxSamples}, {"students", top.Students, MaxStudents}, {"artifacts", top.Artifacts, MaxArtifacts}} {
		if n, ok := countOver(a.raw, a.max); !ok {
			return fmt.Errorf("%s: more than %d (at least %d), more than any run writes: refusing to read them", a.key, a.max, n)
		}
	}
	if n, objs := countNested(b); n > MaxNested || objs > MaxNestedObjects {
		return fmt.Errorf("lists inside workloads, samples and students: more than %d values or %d objects (at least %d and %d), more than any run writes: refusing to read them", MaxNested, MaxNestedObjects, n, objs)
	}
	// The workloads' logs, all together (at most MaxWorkloads lists), and
	// the maps' members. A type error (a workload that is a number) stops
	// neither this decode nor Decode's: what it fills is counted.
	var ws []struct {
		Logs       json.RawMessage
		Thresholds proto.Members
	}
	_ = json.Unmarshal(top.Workloads, &ws)
	total := 0
	for _, w := range ws {
		n, _ := countOver(w.Logs, MaxLogs-total)
		if total += n; total > MaxLogs {
			return fmt.Errorf("workloads' logs: more than %d, more than any run writes: refusing to read them", MaxLogs)
		}
	}
	var maps struct {
		Platforms proto.Members
		Samples   []struct{ Metadata struct{ Extra proto.Members } }
	}
	_ = json.Unmarshal(b, &maps)
	if maps.Platforms > MaxPlatforms {
		return fmt.Errorf("platforms: more than %d, more than any run writes: refusing to read them", MaxPlatforms)
	}
	n := 0
	for _, w := range ws {
		n += int(w.Thresholds)
	}
	for _, s := range maps.Samples {
		n += int(s.Metadata.Extra)
	}
	if n > MaxMapMembers {
		return fmt.Errorf("workloads' thresholds and samples' extra: more than %d members, more than any run writes: refusing to read them", MaxMapMembers)
	}
	return nil
}

// countNested counts the elements of the arrays b holds below its
// top-level members' own elements (a workload's expects, not the
// workloads), and how many of them are objects, in one pass over the
// bytes that builds nothing: a list of empty objects costs a hundred times
// its text once decoded (15 MB of one workload's "expects": [{}, …] took
// rlab show to 1.2 GB). It stops counting past the limits.
func countNested(b []byte) (n, objs int) {
	return proto.CountJSON(b, 3, false, MaxNested, MaxNestedObjects)
}

// uniqueLogs keeps each workload's log paths once, cleaned: a received
// results.json that lists one log many times must not have it read (or
// shown) once per listing.
func uniqueLogs(r *Run) {
	for i := range r.Workloads {
		logs := r.Workloads[i].Logs
		if len(logs) < 2 {
			continue
		}
		seen := make(map[string]bool, len(logs))
		out := logs[:0]
		for _, l := range logs {
			if c := path.Clean(l); l != "" && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
		r.Workloads[i].Logs = out
	}
}

// countOver counts the elements of a JSON array up to max+1; ok is false
// past max. Anything but an array is left to the decoder.
func countOver(raw json.RawMessage, max int) (int, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return 0, true
	}
	n := 0
	for d.More() {
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return n, true
		}
		if n++; n > max {
			return n, false
		}
	}
	return n, true
}
