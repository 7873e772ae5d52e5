//! Drawing the frame with OpenGL: one shader program (written for each GLSL dialect the
//! core may be given), one vertex buffer, three draws. The balls go first, clipped by the
//! stencil to the arena, and stay in front of the background only through the depth test:
//! a frontend that gives no depth or stencil buffer shows it in the picture.

use glow::HasContext;

use crate::draw::{self, Frame, FLOATS, HEIGHT, WIDTH};

/// Which GLSL the context takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// OpenGL 2.1 compatibility: GLSL 1.20.
    Gl2,
    /// OpenGL 3.3 core: GLSL 3.30.
    Gl3,
    /// OpenGL ES 2: GLSL ES 1.00.
    Gles2,
    /// OpenGL ES 3: GLSL ES 3.00.
    Gles3,
}

const VERTEX_BODY: &str = r#"
uniform float u_flip;
ATTR vec2 a_pos;
ATTR vec2 a_uv;
ATTR vec4 a_color;
ATTR float a_kind;
VARY vec2 v_uv;
VARY vec4 v_color;
VARY float v_kind;
VARY vec2 v_px;
void main() {
    v_uv = a_uv;
    v_color = a_color;
    v_kind = a_kind;
    v_px = a_pos;
    // Nearer for higher kinds: balls and digits in front of the background.
    float z = 0.9 - 0.2 * a_kind;
    gl_Position = vec4(a_pos.x / 320.0 - 1.0, u_flip * (1.0 - a_pos.y / 240.0), z, 1.0);
}
"#;

const FRAGMENT_BODY: &str = r#"
uniform float u_time;
VARY vec2 v_uv;
VARY vec4 v_color;
VARY float v_kind;
VARY vec2 v_px;
void main() {
    vec4 c = v_color;
    if (v_kind < 0.5) {
        // Background: a deep blue that breathes, and a grid.
        vec2 g = abs(fract(v_px / 40.0) - 0.5);
        float line = step(0.46, max(g.x, g.y));
        float wave = 0.5 + 0.5 * sin(u_time * 0.05 + v_px.x * 0.015);
        float up = 1.0 - v_px.y / 480.0;
        c = vec4(0.02, 0.03 + 0.04 * up, 0.10 + 0.10 * wave * up, 1.0);
        c.rgb += line * vec3(0.04, 0.10, 0.16);
    } else if (v_kind < 1.5) {
        c.rgb *= 0.8 + 0.2 * (1.0 - abs(v_uv.x * v_uv.y));
    } else if (v_kind < 2.5) {
        // Paddles: lit face, darker rim.
        float e = max(abs(v_uv.x), abs(v_uv.y));
        c.rgb *= 1.0 - 0.45 * smoothstep(0.55, 1.0, e);
    } else if (v_kind < 3.5) {
        // Balls: round, with a highlight up and left.
        float d = length(v_uv);
        if (d > 1.0) discard;
        float hl = 1.0 - smoothstep(0.0, 0.6, length(v_uv - vec2(-0.35, -0.35)));
        c.rgb = c.rgb * (0.55 + 0.45 * (1.0 - d)) + 0.4 * hl;
        c.rgb *= c.a;
        c.a = 1.0;
    }
    OUT_COLOR = c;
}
"#;

fn sources(d: Dialect) -> (String, String) {
    let (vhead, fhead) = match d {
        Dialect::Gl2 => (
            "#version 120\n#define ATTR attribute\n#define VARY varying\n",
            "#version 120\n#define VARY varying\n#define OUT_COLOR gl_FragColor\n",
        ),
        Dialect::Gl3 => (
            "#version 330 core\n#define ATTR in\n#define VARY out\n",
            "#version 330 core\n#define VARY in\nout vec4 frag_color;\n#define OUT_COLOR frag_color\n",
        ),
        Dialect::Gles2 => (
            "#version 100\n#define ATTR attribute\n#define VARY varying\nprecision highp float;\n",
            "#version 100\n#ifdef GL_FRAGMENT_PRECISION_HIGH\nprecision highp float;\n#else\nprecision mediump float;\n#endif\n#define VARY varying\n#define OUT_COLOR gl_FragColor\n",
        ),
        Dialect::Gles3 => (
            "#version 300 es\n#define ATTR in\n#define VARY out\nprecision highp float;\n",
            "#version 300 es\nprecision highp float;\n#define VARY in\nout vec4 frag_color;\n#define OUT_COLOR frag_color\n",
        ),
    };
    (
        format!("{vhead}{VERTEX_BODY}"),
        format!("{fhead}{FRAGMENT_BODY}"),
    )
}

/// The GL objects; made in `context_reset`, deleted in `context_destroy`.
pub struct Renderer {
    gl: glow::Context,
    program: glow::Program,
    vbo: glow::Buffer,
    vao: Option<glow::VertexArray>,
    u_flip: Option<glow::UniformLocation>,
    u_time: Option<glow::UniformLocation>,
    frame: Frame,
    bytes: Vec<u8>,
}

impl Renderer {
    /// Loads GL through the frontend's `get_proc_address` and builds the program.
    ///
    /// # Safety
    /// The frontend's context must be current and `load` must return its functions.
    pub unsafe fn new(
        load: impl FnMut(&std::ffi::CStr) -> *const std::ffi::c_void,
        dialect: Dialect,
    ) -> Result<Renderer, String> {
        // SAFETY: the caller's contract.
        let gl = unsafe { glow::Context::from_loader_function_cstr(load) };
        let (vs, fs) = sources(dialect);
        // SAFETY: calls on the current context with objects made here.
        unsafe {
            let program = gl.create_program()?;
            for (kind, src) in [(glow::VERTEX_SHADER, &vs), (glow::FRAGMENT_SHADER, &fs)] {
                let sh = gl.create_shader(kind)?;
                gl.shader_source(sh, src);
                gl.compile_shader(sh);
                if !gl.get_shader_compile_status(sh) {
                    return Err(format!("shader: {}", gl.get_shader_info_log(sh)));
                }
                gl.attach_shader(program, sh);
                gl.delete_shader(sh);
            }
            for (i, name) in ["a_pos", "a_uv", "a_color", "a_kind"]
                .into_iter()
                .enumerate()
            {
                gl.bind_attrib_location(program, i as u32, name);
            }
            gl.link_program(program);
            if !gl.get_program_link_status(program) {
                return Err(format!("program: {}", gl.get_program_info_log(program)));
            }
            let vao = if matches!(dialect, Dialect::Gl3 | Dialect::Gles3) {
                Some(gl.create_vertex_array()?)
            } else {
                None
            };
            let vbo = gl.create_buffer()?;
            Ok(Renderer {
                u_flip: gl.get_uniform_location(program, "u_flip"),
                u_time: gl.get_uniform_location(program, "u_time"),
                gl,
                program,
                vbo,
                vao,
                frame: Frame::default(),
                bytes: Vec::new(),
            })
        }
    }

    /// Draws `state` into framebuffer `fbo` (the frontend's), `top_left` if the frontend
    /// reads rows from the top.
    pub fn draw(&mut self, state: &crate::game::State, fbo: u32, top_left: bool) {
        draw::frame(state, &mut self.frame);
        let f = &self.frame;
        self.bytes.clear();
        for v in f.mask.iter().chain(&f.balls).chain(&f.rest) {
            self.bytes.extend_from_slice(&v.to_ne_bytes());
        }
        let count = |v: &Vec<f32>| (v.len() / FLOATS) as i32;
        let (n_mask, n_balls, n_rest) = (count(&f.mask), count(&f.balls), count(&f.rest));
        let gl = &self.gl;
        // SAFETY: calls on the current context with this renderer's objects; the vertex
        // data outlives the upload.
        unsafe {
            gl.bind_framebuffer(
                glow::FRAMEBUFFER,
                std::num::NonZeroU32::new(fbo).map(glow::NativeFramebuffer),
            );
            gl.viewport(0, 0, WIDTH as i32, HEIGHT as i32);
            gl.disable(glow::SCISSOR_TEST);
            gl.disable(glow::CULL_FACE);
            gl.disable(glow::BLEND);
            gl.color_mask(true, true, true, true);
            gl.depth_mask(true);
            gl.stencil_mask(0xff);
            gl.clear_color(0.0, 0.0, 0.0, 1.0);
            gl.clear_depth_f32(1.0);
            gl.clear_stencil(0);
            gl.clear(glow::COLOR_BUFFER_BIT | glow::DEPTH_BUFFER_BIT | glow::STENCIL_BUFFER_BIT);

            gl.use_program(Some(self.program));
            gl.uniform_1_f32(self.u_flip.as_ref(), if top_left { -1.0 } else { 1.0 });
            gl.uniform_1_f32(self.u_time.as_ref(), (state.frame % 100_000) as f32);
            if let Some(vao) = self.vao {
                gl.bind_vertex_array(Some(vao));
            }
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(self.vbo));
            gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, &self.bytes, glow::STREAM_DRAW);
            let stride = (FLOATS * 4) as i32;
            for (i, (size, offset)) in [(2, 0), (2, 2), (4, 4), (1, 8)].into_iter().enumerate() {
                gl.enable_vertex_attrib_array(i as u32);
                gl.vertex_attrib_pointer_f32(
                    i as u32,
                    size,
                    glow::FLOAT,
                    false,
                    stride,
                    offset * 4,
                );
            }

            // 1. The arena's inside into the stencil, nothing else.
            gl.disable(glow::DEPTH_TEST);
            gl.enable(glow::STENCIL_TEST);
            gl.stencil_func(glow::ALWAYS, 1, 0xff);
            gl.stencil_op(glow::KEEP, glow::KEEP, glow::REPLACE);
            gl.color_mask(false, false, false, false);
            gl.depth_mask(false);
            gl.draw_arrays(glow::TRIANGLES, 0, n_mask);
            // 2. The balls, only inside the arena, in front by depth.
            gl.color_mask(true, true, true, true);
            gl.depth_mask(true);
            gl.enable(glow::DEPTH_TEST);
            gl.depth_func(glow::LESS);
            gl.stencil_func(glow::EQUAL, 1, 0xff);
            gl.stencil_op(glow::KEEP, glow::KEEP, glow::KEEP);
            gl.draw_arrays(glow::TRIANGLES, n_mask, n_balls);
            // 3. Everything else; the depth test keeps the balls in front.
            gl.disable(glow::STENCIL_TEST);
            gl.draw_arrays(glow::TRIANGLES, n_mask + n_balls, n_rest);

            for i in 0..4 {
                gl.disable_vertex_attrib_array(i);
            }
            if self.vao.is_some() {
                gl.bind_vertex_array(None);
            }
            gl.bind_buffer(glow::ARRAY_BUFFER, None);
            gl.use_program(None);
        }
    }

    /// Frees the GL objects (`context_destroy`: the context is still there).
    pub fn delete(self) {
        // SAFETY: this renderer's objects, on its current context.
        unsafe {
            self.gl.delete_program(self.program);
            self.gl.delete_buffer(self.vbo);
            if let Some(vao) = self.vao {
                self.gl.delete_vertex_array(vao);
            }
        }
    }
}
