module github.com/ginformer/ginformer

go 1.26.0

require (
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
