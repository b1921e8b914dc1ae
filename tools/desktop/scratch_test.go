package desktop

import (
	"fmt"
	"testing"
	"time"
)

func TestScratch(t *testing.T) {
	python := "/usr/bin/python3"
	_, d := start(t, python)
	red := launch(t, d, python, "testdata/colour.py", "Red", "220", "20", "20")
	for i := 0; i < 3; i++ {
		img, _, _ := d.x.capture(red.Bounds)
		fmt.Println("centre", img.At(200, 150), red.Bounds)
		time.Sleep(500 * time.Millisecond)
	}
}
