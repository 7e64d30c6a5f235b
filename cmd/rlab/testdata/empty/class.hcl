# A class lab whose student list is not filled in: every command that runs
# or checks it says so (exit 1) unless --allow-empty.
lab "e" {}
variable "students" {
  type    = map(string)
  default = {}
}
host "s" {
  for_each = var.students
  address  = each.value
}
workload "w" {
  for_each = var.students
  tool     = "exec"
  host     = host.s[each.key]
  command  = ["true"]
}
