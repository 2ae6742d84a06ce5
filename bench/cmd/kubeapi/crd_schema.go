package main

import (
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadCRD is the CustomResourceDefinition of workload: namespaced,
// served and stored as v1, with a status subresource and the structural
// schema crdSchema derives from the Go type.
func workloadCRD() *apiextensionsv1.CustomResourceDefinition {
	s := crdSchema(reflect.TypeFor[workload]())
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdResource + "." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crdGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: crdResource, Singular: "workload", Kind: crdKind, ListKind: crdKind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: crdVersion, Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &s},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// crdSchema is the structural schema of t, as controller-gen writes it
// for the same Go type: objects with properties from the json tags,
// fields without omitempty required, maps as additionalProperties,
// resource.Quantity as int-or-string, metav1.Time as a date-time string,
// apiextensionsv1.JSON as preserved unknown fields, metadata as a bare
// object. A list of structs keyed by "name" (or, for metav1.Condition,
// "type") is a map list (+listType=map), so that server-side apply
// tracks its entries one by one, as it does a pod's containers; other
// lists are atomic.
func crdSchema(t reflect.Type) apiextensionsv1.JSONSchemaProps {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[resource.Quantity]():
		return apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	case reflect.TypeFor[metav1.Time]():
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	case reflect.TypeFor[apiextensionsv1.JSON]():
		return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true)}
	case reflect.TypeFor[metav1.ObjectMeta]():
		return apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	switch t.Kind() {
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case reflect.Int32:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	case reflect.Int64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	case reflect.Map:
		items := crdSchema(t.Elem())
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &items}}
	case reflect.Slice:
		items := crdSchema(t.Elem())
		s := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
		for _, key := range []string{"name", "type"} {
			if _, ok := items.Properties[key]; ok {
				s.XListType, s.XListMapKeys = ptrTo("map"), []string{key}
				if !strings.Contains(","+strings.Join(items.Required, ",")+",", ","+key+",") {
					items.Required = append(items.Required, key)
				}
				break
			}
		}
		return s
	case reflect.Struct:
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		addFields(&s, t)
		return s
	}
	panic("crdSchema: no schema for " + t.String())
}

// addFields adds the json fields of struct t to s, those of embedded
// inline structs included.
func addFields(s *apiextensionsv1.JSONSchemaProps, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			addFields(s, f.Type)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.Properties[name] = crdSchema(f.Type)
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer && name != "metadata" {
			s.Required = append(s.Required, name)
		}
	}
}
