package down

import (
	"slices"
	"strconv"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/steps"
)

// linearUndone is the lookup undoneByWatchdog replaced (a search of the
// record's list per effect), kept as the answer it must give.
func linearUndone(rec *proto.WatchdogRecord, e steps.Effect) bool {
	switch e.Type {
	case "rxe":
		return slices.Contains(rec.Undone.DevicesDeleted, e.ID)
	case "impair":
		return slices.Contains(rec.Undone.ImpairsRemoved, e.Netdev)
	default:
		return slices.Contains(rec.Undone.Stopped, e.ID)
	}
}

// TestUndoneByWatchdogAsBefore: the index names as undone exactly the
// effects the linear lookup did, for every kind of effect, a name in the
// wrong list, repeats and a nil record.
func TestUndoneByWatchdogAsBefore(t *testing.T) {
	rec := &proto.WatchdogRecord{Undone: proto.CleanupResult{
		Stopped:        []string{"p1", "p2", "p2", "rxe0"},
		DevicesDeleted: []string{"rxe0", "p3"},
		ImpairsRemoved: []string{"eth1"},
	}}
	effects := []steps.Effect{
		{Type: "proc", ID: "p1"}, {Type: "proc", ID: "p2"}, {Type: "proc", ID: "p3"},
		{Type: "capture", ID: "p1"}, {Type: "tcp", ID: "p9"},
		{Type: "rxe", ID: "rxe0"}, {Type: "rxe", ID: "rxe1"}, {Type: "rxe", ID: "p1"},
		{Type: "impair", ID: "i0", Netdev: "eth1"}, {Type: "impair", ID: "eth1", Netdev: "eth2"},
	}
	got := undoneByWatchdog(rec, effects)
	for _, e := range effects {
		if want := linearUndone(rec, e); got[watchdogKeyOf(e)] != want {
			t.Errorf("%s %s (netdev %q): undone %v, want %v", e.Type, e.ID, e.Netdev, got[watchdogKeyOf(e)], want)
		}
	}
	if got := undoneByWatchdog(nil, effects); len(got) != 0 {
		t.Errorf("no record: %v", got)
	}
}

// TestUndoneByWatchdogAtBounds: a journal and a watchdog record at their
// bounds, both from outside rlab (state.json of a received run directory:
// rundir.StateObjects effects; the record: one answer of proto.MaxLine,
// about 2 million names), are matched in one pass each. The lookup per
// effect took effects × entries: 1,000 effects against 2 million names
// 25 s (on a loaded machine), so these about 7 hours; now under a second
// (SECURITY 149).
func TestUndoneByWatchdogAtBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("a million effects and two million names")
	}
	names := proto.MaxLine / 4 // `"p1",` and shorter: a name every 4 bytes at least
	rec := &proto.WatchdogRecord{}
	for i := range names {
		rec.Undone.Stopped = append(rec.Undone.Stopped, "x"+strconv.Itoa(i))
	}
	rec.Undone.Stopped = append(rec.Undone.Stopped, "p7")
	effects := make([]steps.Effect, rundir.StateObjects)
	for i := range effects {
		effects[i] = steps.Effect{Type: "proc", ID: "p" + strconv.Itoa(i)}
	}
	got := undoneByWatchdog(rec, effects)
	if len(got) != 1 || !got[watchdogKeyOf(effects[7])] {
		t.Errorf("undone %d effects, want p7 alone", len(got))
	}
}
