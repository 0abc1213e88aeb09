//! Images for the model: PNG in a base64 data URL, scaled down when too large.

use asp_core::RgbImage;
use base64::Engine;

/// An image ready to send, with the scale from the original to the sent image.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedImage {
    /// `data:image/png;base64,…`
    pub data_url: String,
    pub width: u32,
    pub height: u32,
    /// Sent size / original size (1.0 when not scaled).
    pub scale: f32,
}

/// Encodes `image` as a PNG data URL, first scaling it down (area average) so that its
/// longer side is at most `max_side` pixels.
pub fn encode_png_data_url(image: &RgbImage, max_side: u32) -> Result<EncodedImage, String> {
    let (w, h) = (image.width(), image.height());
    if w == 0 || h == 0 {
        return Err(format!("cannot send an empty image ({w}×{h})"));
    }
    let longer = w.max(h);
    let (img, scale) = if longer > max_side.max(1) {
        let scale = max_side.max(1) as f32 / longer as f32;
        let nw = ((w as f32 * scale).round() as u32).max(1);
        let nh = ((h as f32 * scale).round() as u32).max(1);
        (downscale(image, nw, nh), scale)
    } else {
        (image.clone(), 1.0)
    };
    let png_bytes = encode_png(&img)?;
    Ok(EncodedImage {
        data_url: format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&png_bytes)
        ),
        width: img.width(),
        height: img.height(),
        scale,
    })
}

/// Area-average downscaling to `nw × nh` (both no larger than the source).
fn downscale(src: &RgbImage, nw: u32, nh: u32) -> RgbImage {
    let (w, h) = (src.width() as usize, src.height() as usize);
    let px = src.pixels();
    let mut out = Vec::with_capacity(nw as usize * nh as usize);
    for y in 0..nh as usize {
        let y0 = y * h / nh as usize;
        let y1 = ((y + 1) * h / nh as usize).max(y0 + 1);
        for x in 0..nw as usize {
            let x0 = x * w / nw as usize;
            let x1 = ((x + 1) * w / nw as usize).max(x0 + 1);
            let mut sum = [0u64; 3];
            for yy in y0..y1 {
                for p in &px[yy * w + x0..yy * w + x1] {
                    for c in 0..3 {
                        sum[c] += u64::from(p[c]);
                    }
                }
            }
            let n = ((y1 - y0) * (x1 - x0)) as u64;
            out.push([(sum[0] / n) as u8, (sum[1] / n) as u8, (sum[2] / n) as u8]);
        }
    }
    // the size matches by construction
    RgbImage::from_vec(nw, nh, out).unwrap_or_else(|_| src.clone())
}

/// `image` as a PNG file (8-bit RGB).
pub fn encode_png(image: &RgbImage) -> Result<Vec<u8>, String> {
    let mut png_bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut png_bytes, image.width(), image.height());
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    let raw: Vec<u8> = image.pixels().iter().flatten().copied().collect();
    writer.write_image_data(&raw).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(png_bytes)
}

/// Decodes a data URL made by [`encode_png_data_url`] (for tests and tools).
pub fn decode_png_data_url(url: &str) -> Result<RgbImage, String> {
    let b64 = url
        .strip_prefix("data:image/png;base64,")
        .ok_or_else(|| "not a PNG data URL".to_owned())?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| e.to_string())?;
    decode_png(&bytes)
}

/// An 8-bit RGB PNG file's image (a downloaded picture, say); other colour types are an
/// error naming them.
pub fn decode_png(bytes: &[u8]) -> Result<RgbImage, String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "PNG too large".to_owned())?;
    let mut buf = vec![0; size];
    let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    if info.color_type != png::ColorType::Rgb || info.bit_depth != png::BitDepth::Eight {
        return Err(format!(
            "expected 8-bit RGB, got {:?} {:?}",
            info.color_type, info.bit_depth
        ));
    }
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    RgbImage::from_vec(info.width, info.height, pixels).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(w: u32, h: u32) -> RgbImage {
        let px = (0..w * h)
            .map(|i| [(i % w) as u8, (i / w) as u8, 7])
            .collect();
        RgbImage::from_vec(w, h, px).unwrap()
    }

    #[test]
    fn round_trips_without_scaling() {
        let img = gradient(5, 3);
        let enc = encode_png_data_url(&img, 1024).unwrap();
        assert!(enc.data_url.starts_with("data:image/png;base64,"));
        assert_eq!((enc.width, enc.height, enc.scale), (5, 3, 1.0));
        assert_eq!(decode_png_data_url(&enc.data_url).unwrap(), img);
    }

    #[test]
    fn scales_the_longer_side_down() {
        let img = RgbImage::filled(200, 100, [10, 20, 30]);
        let enc = encode_png_data_url(&img, 50).unwrap();
        assert_eq!((enc.width, enc.height), (50, 25));
        assert!((enc.scale - 0.25).abs() < 1e-6);
        let back = decode_png_data_url(&enc.data_url).unwrap();
        assert!(back.pixels().iter().all(|p| *p == [10, 20, 30]));
        assert!(encode_png_data_url(&RgbImage::filled(0, 0, [0; 3]), 10).is_err());
    }
}
