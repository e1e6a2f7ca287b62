// Tensor-level operators: validate, then dispatch to cpu:: or nvidia::.
#pragma once

#include "../core/tensor.hpp"

namespace llaisys::ops {
void add(Tensor &c, const Tensor &a, const Tensor &b);
void argmax(Tensor &max_idx, Tensor &max_val, const Tensor &vals);
void embedding(Tensor &out, const Tensor &index, const Tensor &weight);
void linear(Tensor &out, const Tensor &in, const Tensor &weight, const Tensor *bias);
void rmsNorm(Tensor &out, const Tensor &in, const Tensor &weight, float eps);
void rope(Tensor &out, const Tensor &in, const Tensor &pos_ids, float theta);
void selfAttention(Tensor &out, const Tensor &q, const Tensor &k, const Tensor &v, float scale);
void swiglu(Tensor &out, const Tensor &gate, const Tensor &up);
} // namespace llaisys::ops
