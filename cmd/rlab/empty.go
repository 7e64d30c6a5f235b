package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/pflag"

	"github.com/rlab-dev/rlab/engine/lab"
)

// allowEmptyUsage is --allow-empty's help, the same in validate, plan, run
// and check.
const allowEmptyUsage = "accept a lab, or an --only selection, with no workload (by default an error: a run of it would pass having run nothing)"

func allowEmptyFlag(fs *pflag.FlagSet, dst *bool) {
	fs.BoolVar(dst, strings.TrimPrefix(lab.AllowEmptyFlag, "--"), false, allowEmptyUsage)
}

// emptyLab is the lab's "no workloads" error (lab.NoWorkloads), unless
// --allow-empty.
func emptyLab(l *lab.Lab, allow bool) hcl.Diagnostics {
	if allow {
		return nil
	}
	return l.NoWorkloads()
}

// emptySelection is the error for an --only selection that leaves no
// workload to run, unless --allow-empty.
func emptySelection(l *lab.Lab, only []string, selected int, allow bool) error {
	if allow || selected > 0 || len(only) == 0 {
		return nil
	}
	return fmt.Errorf("--only %s selects no workload of lab %q: a run would pass having run nothing (pass %s if that is what you mean)", strings.Join(only, ","), l.Name, lab.AllowEmptyFlag)
}
