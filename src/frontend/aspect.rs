//! Draws the pixels buffer into the window at the core's display aspect ratio.
//!
//! pixels' own renderer shows square pixels; most consoles' are not (Genesis Plus GX says
//! 4:3 for a 320x224 image, so its pixels are 0.93 as wide as tall). This renderer is the
//! same full-screen triangle and shader as pixels', with a transform that scales the width
//! by the pixel aspect: the height by the largest integer that fits the window, or, in a
//! window smaller than the image, by whatever fits, smoothly filtered.

#[cfg(feature = "gui")]
use pixels::wgpu;
#[cfg(feature = "gui")]
use pixels::PixelsContext;

/// Where the buffer goes in the window, in window pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    /// Drawn size of the whole buffer.
    pub width: f32,
    pub height: f32,
    /// The integer scale of the height; `None` when the image is scaled down to fit.
    pub integer: Option<u32>,
    /// Sample the nearest texel (every pixel at least a pixel wide and tall); otherwise
    /// filter, so that no column or row of the image drops out.
    pub nearest: bool,
}

/// Width of a pixel relative to its height for an image of `size` shown at `aspect`
/// (width over height; 0 or less: square pixels).
pub fn pixel_aspect(size: (u32, u32), aspect: f32) -> f32 {
    if aspect > 0.0 && size.0 > 0 && size.1 > 0 {
        aspect * size.1 as f32 / size.0 as f32
    } else {
        1.0
    }
}

/// The display aspect of an image shown turned by `rotation` quarter turns: a quarter turn
/// turns the core's ratio (of its unrotated picture) over.
pub fn rotated_aspect(aspect: f32, rotation: u32) -> f32 {
    if rotation % 2 == 1 && aspect > 0.0 {
        1.0 / aspect
    } else {
        aspect
    }
}

/// The window size that shows a buffer of `size` at `scale` with pixels `par` wide.
pub fn window_size(size: (u32, u32), par: f32, scale: u32) -> (u32, u32) {
    let width = (size.0 as f32 * par * scale as f32).round().max(1.0) as u32;
    (width, size.1 * scale)
}

/// How a buffer of `size` with pixels `par` wide fits a surface of `surface`.
pub fn layout(size: (u32, u32), par: f32, surface: (u32, u32)) -> Layout {
    let (w, h) = (size.0.max(1) as f32 * par, size.1.max(1) as f32);
    let (sw, sh) = (surface.0.max(1) as f32, surface.1.max(1) as f32);
    let fit = (sw / w).min(sh / h);
    // A window sized by `window_size` is rounded to whole pixels: half a pixel of width
    // more than the window has still counts as fitting (the edge column is cut).
    let integer = ((sw + 0.5) / w).min((sh + 1e-3) / h).floor();
    if integer >= 1.0 {
        Layout {
            width: (w * integer).min(sw),
            height: h * integer,
            integer: Some(integer as u32),
            nearest: par * integer >= 1.0,
        }
    } else {
        Layout {
            width: w * fit,
            height: h * fit,
            integer: None,
            nearest: false,
        }
    }
}

#[cfg(feature = "gui")]
const SHADER: &str = r#"
struct VertexOutput {
    @location(0) tex_coord: vec2<f32>,
    @builtin(position) position: vec4<f32>,
}
struct Locals {
    transform: mat4x4<f32>,
}
@group(0) @binding(2) var<uniform> r_locals: Locals;

@vertex
fn vs_main(@location(0) position: vec2<f32>) -> VertexOutput {
    var out: VertexOutput;
    out.tex_coord = fma(position, vec2<f32>(0.5, -0.5), vec2<f32>(0.5, 0.5));
    out.position = r_locals.transform * vec4<f32>(position, 0.0, 1.0);
    return out;
}

@group(0) @binding(0) var r_tex_color: texture_2d<f32>;
@group(0) @binding(1) var r_tex_sampler: sampler;

@fragment
fn fs_main(@location(0) tex_coord: vec2<f32>) -> @location(0) vec4<f32> {
    return textureSample(r_tex_color, r_tex_sampler, tex_coord);
}
"#;

/// The GPU side: pipeline, samplers, the transform's uniform buffer.
#[cfg(feature = "gui")]
#[derive(Debug)]
pub struct AspectRenderer {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    nearest: wgpu::Sampler,
    linear: wgpu::Sampler,
    vertices: wgpu::Buffer,
    uniform: wgpu::Buffer,
}

#[cfg(feature = "gui")]
const UNIFORM_LEN: u64 = 64;

#[cfg(feature = "gui")]
impl AspectRenderer {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> AspectRenderer {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("framelock_aspect_shader"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let sampler = |filter: wgpu::FilterMode, mip: wgpu::MipmapFilterMode| {
            device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("framelock_aspect_sampler"),
                address_mode_u: wgpu::AddressMode::ClampToEdge,
                address_mode_v: wgpu::AddressMode::ClampToEdge,
                address_mode_w: wgpu::AddressMode::ClampToEdge,
                mag_filter: filter,
                min_filter: filter,
                mipmap_filter: mip,
                lod_min_clamp: 0.0,
                lod_max_clamp: 1.0,
                compare: None,
                anisotropy_clamp: 1,
                border_color: None,
            })
        };
        let nearest = sampler(wgpu::FilterMode::Nearest, wgpu::MipmapFilterMode::Nearest);
        let linear = sampler(wgpu::FilterMode::Linear, wgpu::MipmapFilterMode::Linear);
        // One triangle that covers the whole clip space (as pixels' renderer draws).
        let corners: [[f32; 2]; 3] = [[-1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]];
        let vertices = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("framelock_aspect_vertices"),
            size: 24,
            usage: wgpu::BufferUsages::VERTEX,
            mapped_at_creation: true,
        });
        {
            let bytes: Vec<u8> = corners
                .iter()
                .flatten()
                .flat_map(|f| f.to_le_bytes())
                .collect();
            vertices
                .slice(..)
                .get_mapped_range_mut()
                .copy_from_slice(&bytes);
        }
        vertices.unmap();
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("framelock_aspect_transform"),
            size: UNIFORM_LEN,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("framelock_aspect_bind_group_layout"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        multisampled: false,
                        view_dimension: wgpu::TextureViewDimension::D2,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: wgpu::BufferSize::new(UNIFORM_LEN),
                    },
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("framelock_aspect_pipeline_layout"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let vertex_layout = wgpu::VertexBufferLayout {
            array_stride: 8,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &[wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Float32x2,
                offset: 0,
                shader_location: 0,
            }],
        };
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("framelock_aspect_pipeline"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                buffers: std::slice::from_ref(&vertex_layout),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: Some(wgpu::BlendState::REPLACE),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        AspectRenderer {
            pipeline,
            layout,
            nearest,
            linear,
            vertices,
            uniform,
        }
    }

    /// Draws the pixels texture at `fit` into `target`, a surface of `surface` pixels.
    pub fn render(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        ctx: &PixelsContext<'_>,
        fit: Layout,
        surface: (u32, u32),
    ) {
        let (sw, sh) = (surface.0.max(1) as f32, surface.1.max(1) as f32);
        // Odd surface sizes put the image's centre on half a pixel: shift it onto a whole one.
        let tx = (sw / 2.0).fract() / sw;
        let ty = (sh / 2.0).fract() / sh;
        #[rustfmt::skip]
        let transform: [f32; 16] = [
            fit.width / sw, 0.0, 0.0, 0.0,
            0.0, fit.height / sh, 0.0, 0.0,
            0.0, 0.0, 1.0, 0.0,
            tx, ty, 0.0, 1.0,
        ];
        let bytes: Vec<u8> = transform.iter().flat_map(|f| f.to_le_bytes()).collect();
        ctx.queue.write_buffer(&self.uniform, 0, &bytes);
        let view = ctx
            .texture
            .create_view(&wgpu::TextureViewDescriptor::default());
        let sampler = if fit.nearest {
            &self.nearest
        } else {
            &self.linear
        };
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("framelock_aspect_bind_group"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Sampler(sampler),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: self.uniform.as_entire_binding(),
                },
            ],
        });
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("framelock_aspect_pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
                depth_slice: None,
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        let w = fit.width.min(sw);
        let h = fit.height.min(sh);
        let x = ((sw - w) / 2.0).max(0.0) as u32;
        let y = ((sh - h) / 2.0).max(0.0) as u32;
        pass.set_scissor_rect(x, y, (w as u32).max(1), (h as u32).max(1));
        pass.draw(0..3, 0..1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_genesis_image_is_shown_four_by_three_at_an_integer_height() {
        let par = pixel_aspect((320, 224), 4.0 / 3.0);
        assert!((par - 0.9333).abs() < 1e-3, "{par}");
        // The window `--scale 2` opens.
        let window = window_size((320, 224), par, 2);
        assert_eq!(window, (597, 448));
        let fit = layout((320, 224), par, window);
        assert_eq!((fit.integer, fit.nearest), (Some(2), true));
        assert!((fit.width / fit.height - 4.0 / 3.0).abs() < 0.01, "{fit:?}");
        // At scale 1 the pixels are narrower than one: filtered, no column lost.
        let fit = layout((320, 224), par, window_size((320, 224), par, 1));
        assert_eq!((fit.integer, fit.nearest), (Some(1), false));
        // A larger window: the largest integer height that fits, bars on the sides.
        let fit = layout((320, 224), par, (1280, 720));
        assert_eq!((fit.integer, fit.height), (Some(3), 672.0));
        assert!((fit.width - 896.0).abs() < 0.5, "{fit:?}");
        // A smaller one: scaled down to fit, smoothly.
        let fit = layout((320, 224), par, (200, 200));
        assert_eq!(fit.integer, None);
        assert!(fit.width <= 200.0 && (fit.width / fit.height - 4.0 / 3.0).abs() < 0.01);
    }

    #[test]
    fn square_pixels_stay_square() {
        assert_eq!(pixel_aspect((320, 240), 4.0 / 3.0), 1.0);
        assert_eq!(pixel_aspect((320, 240), 0.0), 1.0);
        assert_eq!(window_size((320, 240), 1.0, 2), (640, 480));
        let fit = layout((320, 240), 1.0, (640, 480));
        assert_eq!(
            (fit.width, fit.height, fit.integer),
            (640.0, 480.0, Some(2))
        );
        assert!(fit.nearest);
    }
}
