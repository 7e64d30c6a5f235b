package report

import (
	"encoding/json"
	"fmt"

	"github.com/rlab-dev/rlab/engine/results"
)

// runDoc is the part of results.json the report reads. It is decoded here,
// tolerantly, rather than through the results package's writer types, so a
// report can still be drawn from a results.json of an older or newer rlab:
// unknown members are ignored, missing ones leave gaps, never an error.
type runDoc struct {
	Lab         string           `json:"lab"`
	Description string           `json:"description"`
	Status      string           `json:"status"`
	Started     string           `json:"started"`
	Finished    string           `json:"finished"`
	Duration    json.RawMessage  `json:"duration"` // seconds, or a Go duration string
	Error       string           `json:"error"`
	Workloads   []workloadDoc    `json:"workloads"`
	Samples     []results.Sample `json:"samples"`
}

type workloadDoc struct {
	Name     string           `json:"name"`
	Slug     string           `json:"slug"`
	Tool     string           `json:"tool"`
	Status   string           `json:"status"`
	Error    string           `json:"error"`
	Hosts    []string         `json:"hosts"`
	Devices  []string         `json:"devices"`
	Duration json.RawMessage  `json:"duration"`
	Expects  []expectDoc      `json:"expects"`
	Samples  []results.Sample `json:"samples"`
	Logs     []string         `json:"logs"` // run-dir-relative paths of its raw outputs
	// Captures are the files of the captures scoped to it alone.
	Captures []string `json:"captures"`
	// Parse is what the output parser said per run besides the samples.
	Parse []results.ParseNote `json:"parse"`
	// Samples here are taken too, though results.Run keeps them at the top.
	CounterNotes []results.CounterNote `json:"counter_notes"`
	RDMA         string                `json:"rdma"` // results.Workload.RDMA
}

type expectDoc struct {
	Condition string `json:"condition"`
	Message   string `json:"message"`
	Held      *bool  `json:"held"`
	OK        *bool  `json:"ok"`
	Passed    *bool  `json:"passed"`
	Size      int64  `json:"size"`
	Repeat    *int   `json:"repeat"`
	Value     string `json:"value"` // what it read, e.g. "bw_avg_gbps = 0.07"
	Error     string `json:"error"`
	Skipped   bool   `json:"skipped"` // its workload did not complete
}

func (e expectDoc) held() bool {
	for _, b := range []*bool{e.Held, e.OK, e.Passed} {
		if b != nil {
			return *b
		}
	}
	return false
}

func (e expectDoc) where() string {
	s := ""
	if e.Size > 0 {
		s = "size " + humanSize(e.Size)
	}
	if e.Repeat != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("repeat %d", *e.Repeat+1)
	}
	return s
}

// durationText prints a duration member that may be seconds or a string.
func durationText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return fmtNum(f) + " s"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// parseRunDoc decodes results.json.
func parseRunDoc(b []byte) (*runDoc, error) {
	var d runDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
