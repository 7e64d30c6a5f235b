package runstate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/steps"
)

// TestJournalGroupCommit: when Note returns, state.json already holds the
// change, even with many workloads noting at once (their writes shared).
func TestJournalGroupCommit(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{Lab: "t"})
	if err != nil {
		t.Fatal(err)
	}
	j.SetRedactor(strings.NewReplacer("hunter2", "<redacted>"))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("p%d", i)
			kind := "proc"
			if i%10 == 0 {
				kind = "rxe" // synced
			}
			if err := j.Note(steps.Effect{Host: "h", Type: kind, ID: id, Argv: []string{"x", "hunter2"}, Pending: true}); err != nil {
				t.Error(err)
				return
			}
			b, err := os.ReadFile(filepath.Join(dir, File))
			if err != nil {
				t.Error(err)
				return
			}
			var st State
			if err := json.Unmarshal(b, &st); err != nil {
				t.Errorf("state.json unreadable mid-run: %v", err)
				return
			}
			for _, e := range st.Effects {
				if e.ID == id {
					return
				}
			}
			t.Errorf("Note(%s) returned before state.json held it", id)
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, File))
	if strings.Contains(string(b), "hunter2") {
		t.Error("a sensitive argv value reached state.json")
	}
	// A later note keeps what an earlier one knew.
	j.Note(steps.Effect{Host: "h", Type: "proc", ID: "p1", PID: 42})
	j.Note(steps.Effect{Host: "h", Type: "proc", ID: "p1", Undone: true})
	for _, e := range j.Snapshot().Effects {
		if e.ID == "p1" && (e.PID != 42 || len(e.Argv) != 2 || !e.Undone || e.Pending) {
			t.Errorf("merged effect = %+v", e)
		}
	}
}
