// winfleet-service.exe: runs winfleet-agent.exe as a real Windows service (see main_windows.go).
// Its own module, so that its few requirements never meet the control plane's or the payload's.
module winfleet.local/windows/service

go 1.26.0

require golang.org/x/sys v0.49.0
