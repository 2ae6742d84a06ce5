package consistency

// RecordSize returns how many versions and deletes w's record holds.
func (w *Writer[C, T]) RecordSize() (versions, deletes int) {
	v, d, _ := w.rec.size()
	return v, d
}
