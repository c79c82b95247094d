package watchdog

// The Scheduler's two heaps of entries: by next look (renewal or deadline)
// and by local deadline.

// entryHeap is a heap of entries in the order O gives, each entry knowing
// its position (O's index field); dueHeap orders them by when the loop must
// look at them next, deadlineHeap by local deadline.
type entryHeap[O entryOrder] []*Entry

// entryOrder is the order of an entryHeap and the field an entry keeps its
// position in (-1 when not in the heap).
type entryOrder interface {
	less(a, b *Entry) bool
	index(e *Entry) *int
}

type byNext struct{}

func (byNext) less(a, b *Entry) bool { return a.next().Before(b.next()) }
func (byNext) index(e *Entry) *int   { return &e.index }

type byDeadline struct{}

func (byDeadline) less(a, b *Entry) bool { return a.deadline.Before(b.deadline) }
func (byDeadline) index(e *Entry) *int   { return &e.dindex }

type (
	dueHeap      = entryHeap[byNext]
	deadlineHeap = entryHeap[byDeadline]
)

func (h entryHeap[O]) Len() int           { return len(h) }
func (h entryHeap[O]) Less(i, j int) bool { var o O; return o.less(h[i], h[j]) }
func (h entryHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]) = i
	*o.index(h[j]) = j
}

func (h *entryHeap[O]) Push(x any) {
	var o O
	e := x.(*Entry)
	*o.index(e) = len(*h)
	*h = append(*h, e)
}

func (h *entryHeap[O]) Pop() any {
	var o O
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*o.index(e) = -1
	*h = old[:len(old)-1]
	return e
}
