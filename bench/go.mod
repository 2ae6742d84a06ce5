module github.com/ginformer/ginformer/bench

go 1.26.0

replace github.com/ginformer/ginformer => ../

require github.com/ginformer/ginformer v0.0.0-00010101000000-000000000000

require (
	k8s.io/api v0.37.1 // indirect
	k8s.io/apimachinery v0.37.1 // indirect
	k8s.io/client-go v0.37.1 // indirect
)
