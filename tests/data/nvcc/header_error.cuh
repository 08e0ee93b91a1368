// A helper template whose body is wrong for some element types.
#pragma once

template <typename T>
__device__ T load_scaled(const T* p, int i) {
  return p[i].scale();
}
