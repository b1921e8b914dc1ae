package server

import (
	"strings"

	"github.com/saucerhq/saucer/command"
)

// progressLines bounds the output lines a progress report shows.
const progressLines = 5

// progressInfo is what the API shows of a device's report: the message's
// latest lines are a shell command's latest output.
func progressInfo(p command.Progress) ProgressInfo {
	info := ProgressInfo{CallID: p.CallID, Progress: p.Progress, Total: p.Total, Message: p.Message}
	if p.Message != "" {
		info.Lines = strings.Split(p.Message, "\n")
		if len(info.Lines) > progressLines {
			info.Lines = info.Lines[len(info.Lines)-progressLines:]
		}
	}
	return info
}
