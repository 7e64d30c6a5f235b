lab "folder" {
  description = "A lab split over files in one folder"
}

variable "server" {
  type = string
}
