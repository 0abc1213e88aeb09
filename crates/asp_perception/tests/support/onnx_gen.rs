//! A small ONNX model writer for tests: the subset of `onnx.proto` (ONNX IR 8, opset 17)
//! needed to build graphs from standard operators, encoded with `prost`. The field
//! numbers follow onnx/onnx.proto.
//!
//! It generates stand-ins for models that ship no offline weights (SAM-style encoder and
//! decoder, CLIP-style image and text towers) with the real models' input/output names
//! and ranks, computing something a test can check by hand.

#![allow(dead_code)]

use std::path::Path;

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    #[prost(string, tag = "2")]
    pub producer_name: String,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    pub domain: String,
    #[prost(int64, tag = "2")]
    pub version: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub op_type: String,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(float, tag = "2")]
    pub f: f32,
    #[prost(int64, tag = "3")]
    pub i: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    /// AttributeType: FLOAT 1, INT 2, STRING 3, INTS 7.
    #[prost(int32, tag = "20")]
    pub r#type: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// FLOAT 1, INT64 7.
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    pub name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueInfoProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorTypeProto {
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Dimension {
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

pub const FLOAT: i32 = 1;
pub const INT64: i32 = 7;

/// A graph under construction.
#[derive(Default)]
pub struct Graph {
    g: GraphProto,
    counter: usize,
}

/// A dimension: fixed or symbolic.
pub enum D {
    N(i64),
    S(&'static str),
}

impl Graph {
    pub fn new(name: &str) -> Self {
        Self {
            g: GraphProto {
                name: name.into(),
                ..Default::default()
            },
            counter: 0,
        }
    }

    fn value_info(name: &str, elem: i32, dims: &[D]) -> ValueInfoProto {
        ValueInfoProto {
            name: name.into(),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: elem,
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|d| match d {
                                D::N(n) => Dimension {
                                    dim_value: Some(*n),
                                    dim_param: None,
                                },
                                D::S(s) => Dimension {
                                    dim_value: None,
                                    dim_param: Some((*s).into()),
                                },
                            })
                            .collect(),
                    }),
                }),
            }),
        }
    }

    pub fn input(&mut self, name: &str, elem: i32, dims: &[D]) -> String {
        self.g.input.push(Self::value_info(name, elem, dims));
        name.into()
    }

    pub fn output(&mut self, name: &str, elem: i32, dims: &[D]) {
        self.g.output.push(Self::value_info(name, elem, dims));
    }

    pub fn constant_f32(&mut self, dims: &[i64], data: Vec<f32>) -> String {
        self.counter += 1;
        let name = format!("c{}", self.counter);
        self.g.initializer.push(TensorProto {
            dims: dims.to_vec(),
            data_type: FLOAT,
            float_data: data,
            name: name.clone(),
            ..Default::default()
        });
        name
    }

    pub fn constant_i64(&mut self, dims: &[i64], data: Vec<i64>) -> String {
        self.counter += 1;
        let name = format!("c{}", self.counter);
        self.g.initializer.push(TensorProto {
            dims: dims.to_vec(),
            data_type: INT64,
            int64_data: data,
            name: name.clone(),
            ..Default::default()
        });
        name
    }

    pub fn scalar(&mut self, v: f32) -> String {
        self.constant_f32(&[], vec![v])
    }

    /// Adds a node with one output; returns the output name (`out` or a fresh one).
    pub fn op(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
        out: Option<&str>,
    ) -> String {
        self.counter += 1;
        let output = out.map_or_else(|| format!("t{}", self.counter), str::to_owned);
        self.g.node.push(NodeProto {
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            output: vec![output.clone()],
            name: format!("n{}", self.counter),
            op_type: op.into(),
            attribute: attrs,
        });
        output
    }

    pub fn bin(&mut self, op: &str, a: &str, b: &str) -> String {
        self.op(op, &[a, b], vec![], None)
    }

    pub fn un(&mut self, op: &str, a: &str) -> String {
        self.op(op, &[a], vec![], None)
    }

    /// Encodes the model (IR 8, default domain opset 17).
    pub fn encode(self) -> Vec<u8> {
        ModelProto {
            ir_version: 8,
            producer_name: "asp_perception tests".into(),
            graph: Some(self.g),
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: 17,
            }],
        }
        .encode_to_vec()
    }

    pub fn save(self, path: &Path) {
        std::fs::write(path, self.encode()).unwrap();
    }
}

pub fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: v.to_vec(),
        r#type: 7,
        ..Default::default()
    }
}

pub fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i: v,
        r#type: 2,
        ..Default::default()
    }
}

pub fn string(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        s: v.as_bytes().to_vec(),
        r#type: 3,
        ..Default::default()
    }
}

/// Sum over `axes` keeping dims (ReduceSum takes axes as an input since opset 13).
pub fn reduce_sum(g: &mut Graph, x: &str, axes: &[i64]) -> String {
    let a = g.constant_i64(&[axes.len() as i64], axes.to_vec());
    g.op("ReduceSum", &[x, &a], vec![int("keepdims", 1)], None)
}

/// Max/Min over `axes` keeping dims (attribute axes until opset 18).
pub fn reduce(g: &mut Graph, op: &str, x: &str, axes: &[i64]) -> String {
    g.op(op, &[x], vec![ints("axes", axes), int("keepdims", 1)], None)
}

/// Stride of the stand-in SAM encoder: one embedding cell per `SAM_STRIDE²` input pixels.
pub const SAM_STRIDE: i64 = 4;

/// A SAM-style encoder: `image` `[1, 3, S, S]` → `image_embeddings` `[1, 3, S/4, S/4]`,
/// the normalised colour averaged over 4 × 4 blocks.
pub fn sam_encoder(path: &Path, s: i64) {
    let mut g = Graph::new("sam_encoder");
    let x = g.input("image", FLOAT, &[D::N(1), D::N(3), D::N(s), D::N(s)]);
    g.op(
        "AveragePool",
        &[&x],
        vec![
            ints("kernel_shape", &[SAM_STRIDE, SAM_STRIDE]),
            ints("strides", &[SAM_STRIDE, SAM_STRIDE]),
        ],
        Some("image_embeddings"),
    );
    let e = s / SAM_STRIDE;
    g.output(
        "image_embeddings",
        FLOAT,
        &[D::N(1), D::N(3), D::N(e), D::N(e)],
    );
    g.save(path);
}

/// Thresholds of the three stand-in decoder masks on the squared colour distance, their
/// IoU predictions, and the logit scale.
pub const SAM_TAUS: [f32; 3] = [0.5, 1.5, 8.0];
pub const SAM_IOUS: [f32; 3] = [0.95, 0.97, 0.5];
pub const SAM_LOGIT_SCALE: f32 = 10.0;

/// A SAM-style decoder with SAM's ONNX signature. It takes the colour of the embedding
/// at the mean of the valid prompt points (a sharp Gaussian-weighted gather), and for
/// each of three thresholds τ returns logits `(τ − |e − e_ref|²) · 10` — so each mask is
/// "pixels of the prompted colour" — restricted to the prompt box when there is one
/// (labels 2/3), −20 outside. Masks come out at 4× the embedding resolution (like SAM's
/// 256 × 256 low-resolution masks); `iou_predictions` are [0.95, 0.97, 0.5].
pub fn sam_decoder(path: &Path, s: i64) {
    let e = s / SAM_STRIDE;
    let mut g = Graph::new("sam_decoder");
    let emb = g.input(
        "image_embeddings",
        FLOAT,
        &[D::N(1), D::N(3), D::N(e), D::N(e)],
    );
    let coords = g.input(
        "point_coords",
        FLOAT,
        &[D::N(1), D::S("num_points"), D::N(2)],
    );
    let labels = g.input("point_labels", FLOAT, &[D::N(1), D::S("num_points")]);
    g.input(
        "mask_input",
        FLOAT,
        &[D::N(1), D::N(1), D::N(4 * e), D::N(4 * e)],
    );
    g.input("has_mask_input", FLOAT, &[D::N(1)]);
    g.input("orig_im_size", FLOAT, &[D::N(2)]);
    // cell centres in S-frame pixel-index units
    let centre = |j: i64| (j * SAM_STRIDE) as f32 + (SAM_STRIDE as f32 - 1.0) / 2.0;
    let gx = g.constant_f32(&[1, 1, 1, e], (0..e).map(centre).collect());
    let gy = g.constant_f32(&[1, 1, e, 1], (0..e).map(centre).collect());
    let i0 = g.constant_i64(&[], vec![0]);
    let i1 = g.constant_i64(&[], vec![1]);
    let px = g.op("Gather", &[&coords, &i0], vec![int("axis", 2)], None); // [1, N]
    let py = g.op("Gather", &[&coords, &i1], vec![int("axis", 2)], None);
    let minus1 = g.scalar(-1.0);
    let two = g.scalar(2.0);
    let one = g.scalar(1.0);
    let is_pad = g.bin("Equal", &labels, &minus1);
    let valid_b = g.un("Not", &is_pad);
    let valid = g.op("Cast", &[&valid_b], vec![int("to", 1)], None);
    let is_box_b = g.bin("GreaterOrEqual", &labels, &two);
    let is_box = g.op("Cast", &[&is_box_b], vec![int("to", 1)], None);
    // mean of the valid points
    let nvalid = reduce_sum(&mut g, &valid, &[1]); // [1, 1]
    let pxv = g.bin("Mul", &px, &valid);
    let pyv = g.bin("Mul", &py, &valid);
    let sx = reduce_sum(&mut g, &pxv, &[1]);
    let sy = reduce_sum(&mut g, &pyv, &[1]);
    let mx = g.bin("Div", &sx, &nvalid);
    let my = g.bin("Div", &sy, &nvalid);
    let ax23 = g.constant_i64(&[2], vec![2, 3]);
    let mx4 = g.op("Unsqueeze", &[&mx, &ax23], vec![], None); // [1, 1, 1, 1]
    let my4 = g.op("Unsqueeze", &[&my, &ax23], vec![], None);
    // sharp Gaussian weights around the prompt location → reference colour
    let dx = g.bin("Sub", &gx, &mx4);
    let dy = g.bin("Sub", &gy, &my4);
    let dx2 = g.bin("Mul", &dx, &dx);
    let dy2 = g.bin("Mul", &dy, &dy);
    let r2 = g.bin("Add", &dx2, &dy2); // [1, 1, e, e]
    let k = g.scalar(-1.0 / (2.0 * 1.0 * 1.0));
    let arg = g.bin("Mul", &r2, &k);
    let w = g.un("Exp", &arg);
    let wsum = reduce_sum(&mut g, &w, &[2, 3]);
    let ew = g.bin("Mul", &emb, &w);
    let esum = reduce_sum(&mut g, &ew, &[2, 3]); // [1, 3, 1, 1]
    let eref = g.bin("Div", &esum, &wsum);
    let diff = g.bin("Sub", &emb, &eref);
    let d2 = g.bin("Mul", &diff, &diff);
    let dist = reduce_sum(&mut g, &d2, &[1]); // [1, 1, e, e]
    let taus = g.constant_f32(&[1, 3, 1, 1], SAM_TAUS.to_vec());
    let margin = g.bin("Sub", &taus, &dist); // [1, 3, e, e]
    let scale = g.scalar(SAM_LOGIT_SCALE);
    let logits = g.bin("Mul", &margin, &scale);
    // the box window
    let big = g.scalar(1.0e4);
    let nbig = g.scalar(-1.0e4);
    let bx_lo = g.op("Where", &[&is_box_b, &px, &big], vec![], None);
    let bx_hi = g.op("Where", &[&is_box_b, &px, &nbig], vec![], None);
    let by_lo = g.op("Where", &[&is_box_b, &py, &big], vec![], None);
    let by_hi = g.op("Where", &[&is_box_b, &py, &nbig], vec![], None);
    let x0 = reduce(&mut g, "ReduceMin", &bx_lo, &[1]);
    let x1 = reduce(&mut g, "ReduceMax", &bx_hi, &[1]);
    let y0 = reduce(&mut g, "ReduceMin", &by_lo, &[1]);
    let y1 = reduce(&mut g, "ReduceMax", &by_hi, &[1]);
    let x0 = g.op("Unsqueeze", &[&x0, &ax23], vec![], None);
    let x1 = g.op("Unsqueeze", &[&x1, &ax23], vec![], None);
    let y0 = g.op("Unsqueeze", &[&y0, &ax23], vec![], None);
    let y1 = g.op("Unsqueeze", &[&y1, &ax23], vec![], None);
    let cast = |g: &mut Graph, b: String| g.op("Cast", &[&b], vec![int("to", 1)], None);
    let a = g.bin("GreaterOrEqual", &gx, &x0);
    let a = cast(&mut g, a);
    let b = g.bin("LessOrEqual", &gx, &x1);
    let b = cast(&mut g, b);
    let c = g.bin("GreaterOrEqual", &gy, &y0);
    let c = cast(&mut g, c);
    let d = g.bin("LessOrEqual", &gy, &y1);
    let d = cast(&mut g, d);
    let inx = g.bin("Mul", &a, &b);
    let iny = g.bin("Mul", &c, &d);
    let inbox = g.bin("Mul", &inx, &iny); // [1, 1, e, e]
    let any_box = reduce(&mut g, "ReduceMax", &is_box, &[1]); // [1, 1]
    let any_box = g.op("Unsqueeze", &[&any_box, &ax23], vec![], None);
    let no_box = g.bin("Sub", &one, &any_box);
    let boxed = g.bin("Mul", &any_box, &inbox);
    let inside = g.bin("Add", &boxed, &no_box); // 1 inside the window (everywhere without a box)
    let kept = g.bin("Mul", &logits, &inside);
    let outside = g.bin("Sub", &inside, &one); // 0 inside, -1 outside
    let twenty = g.scalar(20.0);
    let penalty = g.bin("Mul", &outside, &twenty);
    let low = g.bin("Add", &kept, &penalty);
    let scales = g.constant_f32(&[4], vec![1.0, 1.0, 4.0, 4.0]);
    g.op(
        "Resize",
        &[&low, "", &scales],
        vec![string("mode", "nearest")],
        Some("masks"),
    );
    let ious = g.constant_f32(&[1, 3], SAM_IOUS.to_vec());
    g.op("Identity", &[&ious], vec![], Some("iou_predictions"));
    g.output(
        "masks",
        FLOAT,
        &[D::N(1), D::N(3), D::N(4 * e), D::N(4 * e)],
    );
    g.output("iou_predictions", FLOAT, &[D::N(1), D::N(3)]);
    g.save(path);
}

/// A CLIP-style image tower: `pixel_values` `[1, 3, S, S]` → `image_embeds` `[1, D]` =
/// (channel means of the normalised image) · `w` (`w` is 3 × D, row-major).
pub fn clip_visual(path: &Path, s: Option<i64>, w: &[f32], dim: i64) {
    let mut g = Graph::new("clip_visual");
    let side = |g: Option<i64>| g.map_or(D::S("size"), D::N);
    let x = g.input("pixel_values", FLOAT, &[D::N(1), D::N(3), side(s), side(s)]);
    let pooled = g.un("GlobalAveragePool", &x); // [1, 3, 1, 1]
    let shape = g.constant_i64(&[2], vec![1, 3]);
    let flat = g.op("Reshape", &[&pooled, &shape], vec![], None);
    let wc = g.constant_f32(&[3, dim], w.to_vec());
    g.op("MatMul", &[&flat, &wc], vec![], Some("image_embeds"));
    g.output("image_embeds", FLOAT, &[D::N(1), D::N(dim)]);
    g.save(path);
}

/// A CLIP-style text tower: `input_ids`, `attention_mask` `[1, L]` → `text_embeds`
/// `[1, D]` = the mean over valid tokens of a table lookup `table[id mod rows]`.
pub fn clip_textual(path: &Path, seq: Option<i64>, table: &[f32], rows: i64, dim: i64) {
    let mut g = Graph::new("clip_textual");
    let l = seq.map_or(D::S("sequence"), D::N);
    let ids = g.input("input_ids", INT64, &[D::N(1), l]);
    let l2 = seq.map_or(D::S("sequence"), D::N);
    let mask = g.input("attention_mask", INT64, &[D::N(1), l2]);
    let r = g.constant_i64(&[], vec![rows]);
    let idx = g.bin("Mod", &ids, &r);
    let t = g.constant_f32(&[rows, dim], table.to_vec());
    let rowsv = g.op("Gather", &[&t, &idx], vec![int("axis", 0)], None); // [1, L, D]
    let m = g.op("Cast", &[&mask], vec![int("to", 1)], None); // [1, L]
    let ax = g.constant_i64(&[1], vec![2]);
    let m3 = g.op("Unsqueeze", &[&m, &ax], vec![], None); // [1, L, 1]
    let masked = g.bin("Mul", &rowsv, &m3);
    let s = reduce_sum(&mut g, &masked, &[1]); // [1, 1, D]
    let n = reduce_sum(&mut g, &m3, &[1]); // [1, 1, 1]
    let mean = g.bin("Div", &s, &n);
    let shape = g.constant_i64(&[2], vec![1, dim]);
    g.op("Reshape", &[&mean, &shape], vec![], Some("text_embeds"));
    g.output("text_embeds", FLOAT, &[D::N(1), D::N(dim)]);
    g.save(path);
}
