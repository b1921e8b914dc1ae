package memory_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/memory"
)

func TestMemory(t *testing.T) {
	var m memory.Memory
	if _, ok := m.Last(); ok {
		t.Fatal("empty memory has a last step")
	}
	m.AddNote("ignored: no step yet")
	m.Add(memory.Step{Step: 1, Status: "CONTINUE"})
	m.Add(memory.Step{Step: 2, Status: "PENDING"})
	m.AddNote("The user answered: yes")
	last, _ := m.Last()
	if m.Len() != 2 || last.Step != 2 || len(last.Notes) != 1 || len(m.Steps()[0].Notes) != 0 {
		t.Errorf("memory %+v", m.Steps())
	}
}

func TestBlackboardIsSafeForConcurrentUse(t *testing.T) {
	var b memory.Blackboard
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				b.AddNote(memory.Note{Subtask: fmt.Sprint(i, j)})
				b.Set(fmt.Sprint(i), fmt.Sprint(j))
				b.Notes()
				n := 0
				for range b.All() {
					n++
				}
				if n == 0 || b.Len() < n {
					t.Errorf("All yielded %d notes, Len says %d", n, b.Len())
				}
			}
		}()
	}
	wg.Wait()
	if len(b.Notes()) != 400 {
		t.Errorf("%d notes", len(b.Notes()))
	}
	if v, ok := b.Get("3"); !ok || v != "49" {
		t.Errorf("Get = %q %v", v, ok)
	}
	notes := b.Notes()
	notes[0].Result = "changed"
	if b.Notes()[0].Result == "changed" {
		t.Error("Notes returned the blackboard's own slice")
	}
}

// All yields the notes in the order they were added, and stops when asked.
func TestBlackboardAll(t *testing.T) {
	var b memory.Blackboard
	for i := range 3 {
		b.AddNote(memory.Note{Subtask: fmt.Sprint(i)})
	}
	var got []string
	for n := range b.All() {
		got = append(got, n.Subtask)
		if len(got) == 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[0 1]" || b.Len() != 3 {
		t.Errorf("All yielded %v, Len %d", got, b.Len())
	}
}
