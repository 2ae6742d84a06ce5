package main

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// sourceLabel marks the ConfigMaps to mirror (value "true").
	sourceLabel = "example/mirror"
	// mirrorOfLabel is set on each mirror to the name of its source.
	mirrorOfLabel = "example/mirror-of"
	// mirrorSuffix makes a mirror's name from its source's.
	mirrorSuffix = "-mirror"
)

// reconcileFunc brings the mirror of the source ConfigMap name in line
// with src, the cached source (nil when it is gone or no longer labelled).
// Both controllers call the same one; they differ only in how they read src.
type reconcileFunc func(ctx context.Context, name string, src *corev1.ConfigMap) error

// reconcileMirror makes the ConfigMap "<name>-mirror" hold src's data, or
// deletes it when src is nil. src is the cache's object: it is read, never
// modified. Conflicts and races (a mirror created meanwhile) come back as
// errors, and the controller retries the key with backoff.
func reconcileMirror(ctx context.Context, cms corev1client.ConfigMapInterface, name string, src *corev1.ConfigMap) error {
	mirror := name + mirrorSuffix
	if src == nil {
		err := cms.Delete(ctx, mirror, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	cur, err := cms.Get(ctx, mirror, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: mirror, Labels: map[string]string{mirrorOfLabel: name}},
			Data:       maps.Clone(src.Data),
		}, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case maps.Equal(cur.Data, src.Data) && cur.Labels[mirrorOfLabel] == name:
		return nil
	}
	cur.Data = maps.Clone(src.Data)
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[mirrorOfLabel] = name
	_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// inSync reports, from the apiserver, whether every labelled source has a
// mirror with its data and every mirror has a labelled source, with the
// number of sources.
func inSync(ctx context.Context, cms corev1client.ConfigMapInterface) (sources int, ok bool, err error) {
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, false, fmt.Errorf("list ConfigMaps: %w", err)
	}
	byName := make(map[string]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	ok = true
	for name, cm := range byName {
		if cm.Labels[sourceLabel] == "true" {
			sources++
			m := byName[name+mirrorSuffix]
			ok = ok && m != nil && m.Labels[mirrorOfLabel] == name && maps.Equal(m.Data, cm.Data)
		}
		if of, isMirror := cm.Labels[mirrorOfLabel]; isMirror {
			s := byName[of]
			ok = ok && s != nil && s.Labels[sourceLabel] == "true"
		}
	}
	return sources, ok, nil
}
