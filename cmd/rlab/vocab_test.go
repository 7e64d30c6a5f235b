package main

import "testing"

// TestCompareThresholdOldNames: --metric-threshold takes a metric's older
// expect name (bw_avg_gbps) as the metric itself (bw_avg): with the three
// regressed metrics allowed 30% by their old names, the planted 20% drop
// passes, which it does only if each limit reached its metric.
func TestCompareThresholdOldNames(t *testing.T) {
	code, out, errText := execute(t, newCompareCmd(),
		"--metric-threshold", "bw_peak_gbps=30", "--metric-threshold", "msg_rate_mpps=30", "--metric-threshold", "bw_avg_gbps=30", runBase, runDrop)
	if code != exitOK {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nerr: %s", code, exitOK, out, errText)
	}
}
