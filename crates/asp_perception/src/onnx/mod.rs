//! ONNX Runtime backends through `ort`, loading the runtime library at run time
//! (`load-dynamic`): one process-wide environment, one session per model file.
//!
//! The library is the `libonnxruntime.so` shipped in the PyPI `onnxruntime` wheel (CPU)
//! or `onnxruntime-gpu` wheel (CUDA), version 1.31.x to match `ort` 2.0.0-rc.15.

mod clip;
mod minilm;
mod sam;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use asp_core::models::ModelError;
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::{Tensor, TensorElementType, ValueType};

pub use asp_config::sections::perception::ExecutionProvider;
pub use clip::{ClipOptions, OnnxImageEmbedder};
pub use minilm::{ClipTextEmbedder, MiniLmTextEmbedder};
pub use sam::{MaskGeneratorOptions, OnnxMaskGenerator, OnnxPromptableSegmenter, SamModel};

/// Environment variable that, when set, names the ONNX Runtime library to load instead of
/// the configured one (the variable `ort` itself reads).
pub const ORT_DYLIB_ENV: &str = "ORT_DYLIB_PATH";

static RUNTIME: OnceLock<Result<(Environment, PathBuf), String>> = OnceLock::new();

/// The process-wide ONNX Runtime environment, loading `library` on first use (or
/// `$ORT_DYLIB_PATH` when set). ONNX Runtime allows one environment per process: later
/// calls return the first one, whatever library they name.
pub fn runtime(library: &Path) -> Result<Environment, ModelError> {
    let result = RUNTIME.get_or_init(|| {
        let path = std::env::var_os(ORT_DYLIB_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| library.to_path_buf());
        if !path.exists() {
            return Err(format!(
                "the ONNX Runtime library {} does not exist; run scripts/setup or set {ORT_DYLIB_ENV}",
                path.display()
            ));
        }
        let builder = ort::init_from(&path).map_err(|e| e.to_string())?;
        let env = builder
            .with_name("asp")
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime from {}: {e}", path.display()))?;
        tracing::info!(library = %path.display(), "ONNX Runtime loaded");
        Ok((env, path))
    });
    match result {
        Ok((env, path)) => {
            if path != library && std::env::var_os(ORT_DYLIB_ENV).is_none() {
                tracing::debug!(
                    loaded = %path.display(),
                    requested = %library.display(),
                    "ONNX Runtime already loaded; one library per process"
                );
            }
            Ok(env.clone())
        }
        Err(message) => Err(ModelError::Backend {
            model: "onnxruntime".into(),
            message: message.clone(),
        }),
    }
}

/// How sessions are created.
#[derive(Debug, Clone)]
pub struct OnnxOptions {
    /// The ONNX Runtime shared library.
    pub library: PathBuf,
    /// Intra-op threads per session.
    pub threads: usize,
    pub provider: ExecutionProvider,
}

impl OnnxOptions {
    /// CPU, one thread.
    pub fn cpu(library: impl Into<PathBuf>) -> Self {
        Self {
            library: library.into(),
            threads: 1,
            provider: ExecutionProvider::Cpu,
        }
    }
}

/// The shape of one input or output as the model declares it (`-1` for dynamic axes).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub element: String,
    pub shape: Vec<i64>,
}

/// A float tensor read back from a model.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorF32 {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// An input tensor for [`OnnxModel::run`].
#[derive(Debug, Clone)]
pub enum InputTensor {
    F32(Vec<i64>, Vec<f32>),
    I64(Vec<i64>, Vec<i64>),
}

/// One loaded ONNX model: a session behind a lock (`ort` sessions run with `&mut`) and its
/// declared inputs and outputs.
#[derive(Debug)]
pub struct OnnxModel {
    name: String,
    session: Mutex<Session>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl OnnxModel {
    /// Loads `path` with graph optimisation level `All` and the configured threads and
    /// execution provider. `name` labels errors, e.g. `"MiniLM text embedder"`.
    pub fn load(name: &str, path: &Path, options: &OnnxOptions) -> Result<Self, ModelError> {
        let backend = |message: String| ModelError::Backend {
            model: name.to_owned(),
            message,
        };
        if !path.is_file() {
            return Err(backend(format!(
                "model file {} does not exist",
                path.display()
            )));
        }
        let env = runtime(&options.library)?;
        let builder = Session::builder(&env).map_err(|e| backend(e.to_string()))?;
        let builder = builder
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| backend(e.to_string()))?
            .with_intra_threads(options.threads.max(1))
            .map_err(|e| backend(e.to_string()))?;
        let mut builder = with_provider(builder, options.provider).map_err(backend)?;
        let session = builder
            .commit_from_file(path)
            .map_err(|e| backend(format!("cannot load {}: {e}", path.display())))?;
        let spec = |o: &ort::value::Outlet| TensorSpec {
            name: o.name().to_owned(),
            element: match o.dtype() {
                ValueType::Tensor { ty, .. } => format!("{ty:?}"),
                other => format!("{other:?}"),
            },
            shape: o
                .dtype()
                .tensor_shape()
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default(),
        };
        let inputs = session.inputs().iter().map(spec).collect();
        let outputs = session.outputs().iter().map(spec).collect();
        tracing::debug!(model = name, path = %path.display(), "ONNX model loaded");
        Ok(Self {
            name: name.to_owned(),
            session: Mutex::new(session),
            inputs,
            outputs,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    pub fn input(&self, name: &str) -> Option<&TensorSpec> {
        self.inputs.iter().find(|i| i.name == name)
    }

    /// Checks that the model declares every input in `names`, naming the first missing.
    pub fn require_inputs(&self, names: &[&str]) -> Result<(), ModelError> {
        for n in names {
            if self.input(n).is_none() {
                return Err(self.bad_model(format!(
                    "has no input {n:?}; its inputs are {:?}",
                    self.inputs.iter().map(|i| &i.name).collect::<Vec<_>>()
                )));
            }
        }
        Ok(())
    }

    /// Checks that the model declares every output in `names`.
    pub fn require_outputs(&self, names: &[&str]) -> Result<(), ModelError> {
        for n in names {
            if !self.outputs.iter().any(|o| o.name == *n) {
                return Err(self.bad_model(format!(
                    "has no output {n:?}; its outputs are {:?}",
                    self.outputs.iter().map(|o| &o.name).collect::<Vec<_>>()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn bad_model(&self, problem: String) -> ModelError {
        ModelError::Backend {
            model: self.name.clone(),
            message: format!("the model {problem}"),
        }
    }

    /// Runs the model on named inputs and returns the float outputs named in `outputs`,
    /// in that order.
    pub fn run(
        &self,
        inputs: Vec<(&str, InputTensor)>,
        outputs: &[&str],
    ) -> Result<Vec<TensorF32>, ModelError> {
        let backend = |message: String| ModelError::Backend {
            model: self.name.clone(),
            message,
        };
        let mut values: Vec<(std::borrow::Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(inputs.len());
        for (name, tensor) in inputs {
            let value: SessionInputValue<'_> = match tensor {
                InputTensor::F32(shape, data) => Tensor::from_array((shape, data))
                    .map_err(|e| backend(format!("input {name}: {e}")))?
                    .into(),
                InputTensor::I64(shape, data) => Tensor::from_array((shape, data))
                    .map_err(|e| backend(format!("input {name}: {e}")))?
                    .into(),
            };
            values.push((name.into(), value));
        }
        let mut session = self
            .session
            .lock()
            .map_err(|_| backend("a previous run panicked".into()))?;
        let result = session
            .run(values)
            .map_err(|e| backend(format!("inference failed: {e}")))?;
        let mut by_name: HashMap<&str, TensorF32> = HashMap::new();
        for name in outputs {
            let value = result
                .get(*name)
                .ok_or_else(|| backend(format!("no output named {name:?}")))?;
            let (shape, data) = value.try_extract_tensor::<f32>().map_err(|e| {
                backend(format!(
                    "output {name} is not a float tensor ({e}); expected {:?}",
                    TensorElementType::Float32
                ))
            })?;
            by_name.insert(
                name,
                TensorF32 {
                    shape: shape.iter().map(|&d| d.max(0) as usize).collect(),
                    data: data.to_vec(),
                },
            );
        }
        outputs
            .iter()
            .map(|n| {
                by_name
                    .remove(n)
                    .ok_or_else(|| backend(format!("output {n:?} requested twice")))
            })
            .collect()
    }
}

fn with_provider(
    builder: ort::session::builder::SessionBuilder,
    provider: ExecutionProvider,
) -> Result<ort::session::builder::SessionBuilder, String> {
    match provider {
        ExecutionProvider::Cpu => Ok(builder),
        #[cfg(feature = "cuda")]
        ExecutionProvider::Cuda => builder
            .with_execution_providers([ort::ep::CUDA::default().build()])
            .map_err(|e| e.to_string()),
        #[cfg(not(feature = "cuda"))]
        ExecutionProvider::Cuda => Err(
            "execution_provider: cuda needs asp_perception built with its `cuda` feature \
             (cargo build --features asp_perception/cuda) and the onnxruntime-gpu library"
                .into(),
        ),
    }
}

/// The model declares a fixed spatial size `[.., .., h, w]`; `None` when dynamic.
pub(crate) fn fixed_hw(spec: &TensorSpec) -> Option<(u32, u32)> {
    let n = spec.shape.len();
    if n < 2 {
        return None;
    }
    let (h, w) = (spec.shape[n - 2], spec.shape[n - 1]);
    (h > 0 && w > 0).then_some((h as u32, w as u32))
}
